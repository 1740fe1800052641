import { BackendError, type LockInfo } from '@holdfast/core';
import {
  busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  granted,
  type LockBackend,
  sleep,
  TimerHeap,
  type WaitOptions,
} from '@holdfast/core/backend';
import type pg from 'pg';
import { advisoryKey } from './advisory-key.js';
import { POSTGRES_SESSION_CAPABILITIES } from './capabilities.js';
import { byKey, type LockRow, lockInfo } from './rows.js';
import type { SessionConnections } from './session-connections.js';
import { type SessionContext, SessionGrant } from './session-grant.js';
import type { SessionStatements } from './session-statements.js';
import type { SqlRunner } from './sql-runner.js';
import { likePrefix } from './statements.js';
import type { TableQuery } from './table-query.js';

const LOCK_NOT_AVAILABLE = '55P03';
/** After a wait that failed (not a timeout), the pause before the next attempt, so that a failing server is not spun on. */
const WAIT_RETRY_MS = 1000;

interface GrantRow {
  token: string;
  acquired_at: Date;
  pid: number;
}

/** Session mode: PostgreSQL advisory locks, one dedicated connection per held lock (session-statements.ts). */
export class SessionBackend implements LockBackend {
  readonly name = 'postgres';
  readonly capabilities = POSTGRES_SESSION_CAPABILITIES;
  private readonly context: SessionContext;

  constructor(
    private readonly runner: SqlRunner,
    private readonly query: TableQuery,
    private readonly connections: SessionConnections,
    private readonly sql: SessionStatements,
    /** The configured table name: part of every key's advisory id. */
    private readonly space: string,
  ) {
    this.context = { connections, sql, query, timers: new TimerHeap() };
  }

  async tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome> {
    const lock = advisoryKey(this.space, request.key);
    const client = await this.connections.take(call.signal);
    const sentAt = Date.now();
    try {
      const values = [lock, request.key, request.lockId, request.owner, request.reason ?? null, request.ttlMs];
      const [row] = await this.query.run<GrantRow>(this.sql.grant, values, call.signal, (...args) => this.connections.run(client, ...args));
      if (!row) {
        this.connections.giveBack(client);
        return busy();
      }
      await this.confirm(client, lock, row.pid, call.signal);
      return granted(new SessionGrant(this.context, { client, pid: row.pid, lock }, request, BigInt(row.token), row.acquired_at, sentAt));
    } catch (error) {
      // The lock may have been taken before the failure: cutting the connection frees it.
      this.connections.discard(client);
      throw error;
    }
  }

  /** Until the holder lets go (a release, its session ending) or `timeoutMs`, blocked on the lock itself. */
  async waitForChange(key: string, _busy: unknown, options: WaitOptions): Promise<void> {
    const waitMs = Math.floor(options.timeoutMs);
    if (waitMs < 1 || options.signal.aborted) return;
    let client: pg.PoolClient | undefined;
    try {
      client = await this.connections.take(options.signal);
      await this.connections.run(client, this.sql.wait, [advisoryKey(this.space, key), waitMs], options.signal);
      this.connections.giveBack(client);
    } catch (error) {
      if ((error as { code?: unknown }).code === LOCK_NOT_AVAILABLE) {
        this.connections.giveBack(client!);
        return;
      }
      if (client) this.connections.discard(client);
      if (!options.signal.aborted) await sleep(Math.min(waitMs, WAIT_RETRY_MS), options.signal).catch(() => undefined);
    }
  }

  /** Ends the session holding the key if it is this request's (a grant whose answer never reached core). */
  async abandon(request: GrantRequest, call: CallContext): Promise<void> {
    await this.query.run(this.sql.abandon, [request.key, request.lockId], call.signal);
  }

  async inspect(key: string, call: CallContext): Promise<LockInfo | null> {
    const [row] = await this.query.run<LockRow>(this.sql.inspect, [key], call.signal);
    return row ? lockInfo(row) : null;
  }

  async list(prefix: string, call: CallContext): Promise<readonly LockInfo[]> {
    return (await this.query.run<LockRow>(this.sql.list, [likePrefix(prefix)], call.signal)).map(lockInfo).sort(byKey);
  }

  /** Ends the holder's session: the server frees the lock, and the holder hears its connection end. */
  async forceRelease(key: string, call: CallContext): Promise<boolean> {
    const [row] = await this.query.run<{ freed: boolean | null }>(this.sql.forceRelease, [advisoryKey(this.space, key)], call.signal);
    return row?.freed === true;
  }

  async close(call: CallContext): Promise<void> {
    this.context.timers.stop();
    await this.connections.close(call.signal);
    await this.runner.close(call.signal);
  }

  /**
   * A second statement on the same connection must reach the same server process, which must hold
   * the lock. Behind a pooler in transaction mode (PgBouncer) it may not: then session locks cannot
   * work at all, and saying so beats a lock that silently belongs to some other client's statements.
   */
  private async confirm(client: pg.PoolClient, lock: bigint, pid: number, signal: AbortSignal): Promise<void> {
    const [row] = await this.connections.run<{ me: number; held: boolean }>(client, this.sql.check, [lock, pid], signal);
    if (row?.me === pid && row.held) return;
    throw new BackendError(
      'postgres',
      `session mode: two statements on one connection reached different server processes (${pid}, then ${row?.me}) or the lock ` +
        'vanished between them. A pooler in transaction or statement mode (PgBouncer) cannot keep a session lock: connect ' +
        'directly or through session pooling, or use lease mode',
    );
  }
}
