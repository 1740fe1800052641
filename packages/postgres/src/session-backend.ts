import type { LockInfo } from '@holdfast/core';
import {
  type Busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  type LockBackend,
  type ModeRequest,
  type SlotRequest,
  sleep,
  TimerHeap,
  type WaitOptions,
} from '@holdfast/core/backend';
import type pg from 'pg';
import { advisoryKey } from './advisory-key.js';
import { POSTGRES_SESSION_CAPABILITIES } from './capabilities.js';
import { byKey, type LockRow, lockInfo, type ModeHolderRow, modeHolderInfo } from './rows.js';
import type { SessionConnections } from './session-connections.js';
import type { SessionContext } from './session-grant.js';
import type { SessionStatements } from './session-statements.js';
import { SessionTaker, type SessionWake } from './session-taker.js';
import type { SqlRunner } from './sql-runner.js';
import { likePrefix } from './statements.js';
import type { TableQuery } from './table-query.js';

const LOCK_NOT_AVAILABLE = '55P03';
/** After a wait that failed (not a timeout), the pause before the next attempt, so that a failing server is not spun on. */
const WAIT_RETRY_MS = 1000;
/** The longest a semaphore's waiter blocks on one slot before it tries again (any slot may be freed first). */
const SLOT_WAIT_MS = 500;

/** Session mode: PostgreSQL advisory locks, one dedicated connection per held lock (session-statements.ts). */
export class SessionBackend implements LockBackend<SessionWake> {
  readonly name = 'postgres';
  readonly capabilities = POSTGRES_SESSION_CAPABILITIES;
  private readonly context: SessionContext;
  private readonly taker: SessionTaker;

  constructor(
    private readonly runner: SqlRunner,
    private readonly query: TableQuery,
    private readonly connections: SessionConnections,
    private readonly sql: SessionStatements,
    /** The configured table name: part of every key's advisory id. */
    private readonly space: string,
  ) {
    this.context = { connections, sql, query, timers: new TimerHeap() };
    this.taker = new SessionTaker(this.context, query, space);
  }

  tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<SessionWake>> {
    return this.taker.take(request, { use: 'plain' }, call.signal);
  }

  /** A reader takes the key's advisory lock shared, a writer exclusive: PostgreSQL excludes them (session-grant-statement.ts). */
  tryGrantMode(request: ModeRequest, call: CallContext): Promise<GrantOutcome<SessionWake>> {
    return this.taker.take(request, { use: request.mode }, call.signal);
  }

  /** Slot i of a key is an advisory id of its own; the fence row's records hold the limit (session-grant-statement.ts). */
  tryGrantSlot(request: SlotRequest, call: CallContext): Promise<GrantOutcome<SessionWake>> {
    return this.taker.take(request, { use: 'slot', limit: request.limit }, call.signal);
  }

  async slotHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return (await this.query.run<LockRow>(this.sql.slotHolders, [key], call.signal)).map(lockInfo);
  }

  async modeHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return (await this.query.run<ModeHolderRow>(this.sql.modeHolders, [key], call.signal)).map(modeHolderInfo);
  }

  /**
   * Until the holder lets go (a release, its session ending) or `timeoutMs`, blocked on the lock
   * itself: a writer until every holder is gone, anyone else until no exclusive holder is left. A
   * semaphore's waiter blocks on its oldest slot, and for at most SLOT_WAIT_MS: another slot may
   * be freed first, and one connection can wait on one lock only.
   */
  async waitForChange(key: string, state: Busy<SessionWake>, options: WaitOptions): Promise<void> {
    const slotLock = state.wake?.slotLock;
    const waitMs = Math.floor(slotLock === undefined ? options.timeoutMs : Math.min(options.timeoutMs, SLOT_WAIT_MS));
    if (waitMs < 1 || options.signal.aborted) return;
    let client: pg.PoolClient | undefined;
    try {
      client = await this.connections.take(options.signal);
      const wait = state.wake?.exclusive ? this.sql.waitExclusive : this.sql.wait;
      await this.connections.run(client, wait, [slotLock ?? advisoryKey(this.space, key), waitMs], options.signal);
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

  /** Ends the session holding the key if it is this request's (a grant of any use whose answer never reached core). */
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

  /** Ends every holder's session (a read-write lock's readers, a semaphore's slots): the server frees the locks, and each holder hears its connection end. */
  async forceRelease(key: string, call: CallContext): Promise<boolean> {
    const [row] = await this.query.run<{ freed: boolean | null }>(this.sql.forceRelease, [advisoryKey(this.space, key), key], call.signal);
    return row?.freed === true;
  }

  async close(call: CallContext): Promise<void> {
    this.context.timers.stop();
    await this.connections.close(call.signal);
    await this.runner.close(call.signal);
  }
}
