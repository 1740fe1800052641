import { BackendError, LockConflictError } from '@holdfast/core';
import { type Busy, busy, type GrantOutcome, type GrantRequest, granted } from '@holdfast/core/backend';
import type pg from 'pg';
import { advisoryKey, semaphoreBase } from './advisory-key.js';
import { READ_WRITE_LIMIT } from './mode-statements.js';
import { inUseAs } from './rows.js';
import { type SessionContext, SessionGrant } from './session-grant.js';
import type { SessionGrantRow, SessionUse } from './session-grant-statement.js';
import type { TableQuery } from './table-query.js';

/**
 * What a busy session grant tells the wait that follows it: a writer waits for every holder to go,
 * others for an exclusive one; a semaphore's waiter on one slot (`slotLock`), the oldest.
 */
export interface SessionWake {
  readonly exclusive: boolean;
  readonly slotLock?: bigint;
}

const WRITER_BUSY: Busy<SessionWake> = busy({ exclusive: true });

/** The grant is prepared once per dedicated connection (session-connections.ts) under this name. */
const GRANT_STATEMENT = 'holdfast_session_grant';
/** PostgreSQL's invalid_sql_statement_name: a prepared statement unknown to the server process that got its Bind. */
const UNKNOWN_STATEMENT = '26000';
const POOLER_ADVICE =
  'A pooler in transaction or statement mode (PgBouncer) cannot keep a session lock: connect directly or through session pooling, or use lease mode';

/** A grant of `use`; `limit` for a semaphore's slot. */
export interface SessionAsk {
  readonly use: SessionUse;
  readonly limit?: number;
}

/**
 * Takes session grants of every use (a plain lock, a reader, a writer, a semaphore's slot) on a
 * dedicated connection: the grant statement, then a second statement that must reach the same
 * server process holding the lock. The connection is kept by the grant, given back when nothing was
 * taken, and cut on any failure, which makes the server free whatever it may have taken.
 */
export class SessionTaker {
  constructor(
    private readonly context: SessionContext,
    private readonly query: TableQuery,
    /** The configured table name: part of every key's advisory id. */
    private readonly space: string,
  ) {}

  async take(request: GrantRequest, ask: SessionAsk, signal: AbortSignal): Promise<GrantOutcome<SessionWake>> {
    const { connections } = this.context;
    const id = ask.use === 'slot' ? semaphoreBase(this.space, request.key) : advisoryKey(this.space, request.key);
    const client = await connections.take(signal);
    const sentAt = Date.now();
    let row: SessionGrantRow;
    try {
      row = await this.grant(client, id, request, ask, signal);
      if (row.took) {
        const lock = BigInt(row.lock!);
        await this.confirm(client, lock, row.pid, signal);
        const session = { client, pid: row.pid, lock, shared: ask.use === 'shared' };
        return granted(new SessionGrant(this.context, session, request, BigInt(row.token!), row.acquired_at, sentAt));
      }
    } catch (error) {
      // The lock may have been taken before the failure: cutting the connection frees it.
      connections.discard(client);
      throw error;
    }
    connections.giveBack(client);
    if (row.other_use !== null) {
      const mine = ask.use === 'plain' ? 0 : ask.use === 'slot' ? ask.limit! : READ_WRITE_LIMIT;
      throw new LockConflictError(request.key, `it is in use as ${inUseAs(row.other_use)}, not as ${inUseAs(mine)}`);
    }
    if (ask.use === 'exclusive') return WRITER_BUSY;
    return row.wait_lock === null ? busy() : busy({ exclusive: false, slotLock: BigInt(row.wait_lock) });
  }

  /** The grant statement; a key seen for the first time answers no row (its fence row is created then), so it is asked again once. */
  private async grant(
    client: pg.PoolClient,
    id: bigint,
    request: GrantRequest,
    ask: SessionAsk,
    signal: AbortSignal,
  ): Promise<SessionGrantRow> {
    const values = [id, request.key, request.lockId, request.owner, request.reason ?? null, request.ttlMs, ask.use, ask.limit ?? null];
    const run = async (): Promise<SessionGrantRow | undefined> =>
      (
        await this.query.run<SessionGrantRow>(this.context.sql.grant, values, signal, (text, params, bound) =>
          this.context.connections.run(client, text, params, bound, GRANT_STATEMENT),
        )
      )[0];
    let row: SessionGrantRow | undefined;
    try {
      row = (await run()) ?? (await run());
    } catch (error) {
      // Prepared on one server process, bound on another: the connection does not keep its session.
      if ((error as { code?: unknown }).code !== UNKNOWN_STATEMENT) throw error;
      throw new BackendError(
        'postgres',
        `session mode: two statements on one connection reached different server processes (the grant, prepared on one, is unknown to the other). ${POOLER_ADVICE}`,
        error,
      );
    }
    if (!row) throw new BackendError('postgres', `session mode: the fence row of key "${request.key}" was not found after it was created`);
    // Taken but not recorded cannot happen while the fence row exists (it is locked): the caller cuts the connection.
    if (row.took && (row.token === null || row.lock === null))
      throw new BackendError('postgres', `session mode: a grant of key "${request.key}" took the lock but recorded no token`);
    return row;
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
        `vanished between them. ${POOLER_ADVICE}`,
    );
  }
}
