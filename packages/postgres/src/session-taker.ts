import { BackendError, LockConflictError } from '@holdfast/core';
import { type Busy, busy, type GrantOutcome, type GrantRequest, granted } from '@holdfast/core/backend';
import type pg from 'pg';
import { advisoryKey } from './advisory-key.js';
import { type SessionContext, SessionGrant } from './session-grant.js';
import type { SessionGrantRow, SessionUse } from './session-grant-statement.js';
import type { TableQuery } from './table-query.js';

/** What a busy session grant tells the wait that follows it: a writer waits for every holder to go, others for an exclusive one. */
export interface SessionWake {
  readonly exclusive: boolean;
}

const WRITER_BUSY: Busy<SessionWake> = busy({ exclusive: true });

/** How a conflict names a use in its message. */
const USE_NAMES: Record<string, string> = { plain: 'a plain lock', 'read-write': 'a read-write lock' };

/** A grant the statement answered for: taken (with the row) or not. */
type Answer = { readonly taken: true; readonly row: SessionGrantRow } | { readonly taken: false; readonly otherUse: string | null };

/**
 * Takes session grants of every use (a plain lock, a reader, a writer) on a dedicated connection:
 * the grant statement, then a second statement that must reach the same server process holding
 * the lock. The connection is kept by the grant, given back when nothing was taken, and cut on any
 * failure, which makes the server free whatever it may have taken.
 */
export class SessionTaker {
  constructor(
    private readonly context: SessionContext,
    private readonly query: TableQuery,
    /** The configured table name: part of every key's advisory id. */
    private readonly space: string,
  ) {}

  async take(request: GrantRequest, use: SessionUse, signal: AbortSignal): Promise<GrantOutcome<SessionWake>> {
    const { connections } = this.context;
    const lock = advisoryKey(this.space, request.key);
    const client = await connections.take(signal);
    const sentAt = Date.now();
    let answer: Answer;
    try {
      answer = await this.grant(client, lock, request, use, signal);
      if (answer.taken) {
        const { row } = answer;
        await this.confirm(client, lock, row.pid, signal);
        const session = { client, pid: row.pid, lock, shared: use === 'shared' };
        return granted(new SessionGrant(this.context, session, request, BigInt(row.token!), row.acquired_at, sentAt));
      }
    } catch (error) {
      // The lock may have been taken before the failure: cutting the connection frees it.
      connections.discard(client);
      throw error;
    }
    connections.giveBack(client);
    if (answer.otherUse !== null) {
      const want = use === 'plain' ? 'plain' : 'read-write';
      const names = `it is in use as ${USE_NAMES[answer.otherUse] ?? answer.otherUse}, not as ${USE_NAMES[want]}`;
      throw new LockConflictError(request.key, names);
    }
    return use === 'exclusive' ? WRITER_BUSY : busy();
  }

  /** The grant statement; a key seen for the first time answers no row (its fence row is created then), so it is asked again once. */
  private async grant(client: pg.PoolClient, lock: bigint, request: GrantRequest, use: SessionUse, signal: AbortSignal): Promise<Answer> {
    const values = [lock, request.key, request.lockId, request.owner, request.reason ?? null, request.ttlMs, use];
    const run = async (): Promise<SessionGrantRow | undefined> =>
      (
        await this.query.run<SessionGrantRow>(this.context.sql.grant, values, signal, (...args) =>
          this.context.connections.run(client, ...args),
        )
      )[0];
    const row = (await run()) ?? (await run());
    if (!row) throw new BackendError('postgres', `session mode: the fence row of key "${request.key}" was not found after it was created`);
    if (!row.took) return { taken: false, otherUse: row.other_use };
    // Taken but not recorded cannot happen while the fence row exists (it is locked): the caller cuts the connection.
    if (row.token === null)
      throw new BackendError('postgres', `session mode: a grant of key "${request.key}" took the lock but recorded no token`);
    return { taken: true, row };
  }

  /**
   * A second statement on the same connection must reach the same server process, which must hold
   * the lock. Behind a pooler in transaction mode (PgBouncer) it may not: then session locks cannot
   * work at all, and saying so beats a lock that silently belongs to some other client's statements.
   */
  private async confirm(client: pg.PoolClient, lock: bigint, pid: number, signal: AbortSignal): Promise<void> {
    const [row] = await this.context.connections.run<{ me: number; held: boolean }>(client, this.context.sql.check, [lock, pid], signal);
    if (row?.me === pid && row.held) return;
    throw new BackendError(
      'postgres',
      `session mode: two statements on one connection reached different server processes (${pid}, then ${row?.me}) or the lock ` +
        'vanished between them. A pooler in transaction or statement mode (PgBouncer) cannot keep a session lock: connect ' +
        'directly or through session pooling, or use lease mode',
    );
  }
}
