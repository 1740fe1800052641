import type { LockInfo } from '@holdfast/core';
import {
  type Busy,
  busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  granted,
  type LockBackend,
  type WaitOptions,
} from '@holdfast/core/backend';
import { POSTGRES_CAPABILITIES } from './capabilities.js';
import { ExtendBatcher } from './extend-batcher.js';
import type { LockTable } from './lock-table.js';
import { PostgresGrant } from './postgres-grant.js';
import type { ReleaseListener } from './release-listener.js';
import type { SqlRunner } from './sql-runner.js';

/** What a busy answer tells the wait that follows it. */
export interface PostgresWake {
  /** The listener's mark taken before the attempt: a release heard after it wakes the wait at once. */
  readonly mark: number;
  /** The holder's lease left by the server's clock, or null when unknown. */
  readonly remainingMs: number | null;
}

/** Lease mode: a row per held key, one statement per operation, LISTEN/NOTIFY wake-ups. */
export class PostgresBackend implements LockBackend<PostgresWake> {
  readonly name = 'postgres';
  readonly capabilities = POSTGRES_CAPABILITIES;
  private readonly batcher: ExtendBatcher;

  constructor(
    private readonly runner: SqlRunner,
    private readonly table: LockTable,
    private readonly listener: ReleaseListener,
    private readonly pollIntervalMs: number,
  ) {
    this.batcher = new ExtendBatcher((items, signal) => table.extendMany(items, signal));
  }

  async tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<PostgresWake>> {
    const mark = this.listener.mark();
    const answer = await this.table.grant(request, call.signal);
    if (!answer.granted) return busy({ mark, remainingMs: answer.remainingMs });
    return granted(
      new PostgresGrant(this.table, this.batcher, request.key, request.lockId, answer.token, answer.acquiredAt, answer.expiresAt),
    );
  }

  /** Until a release of `key` is heard, the holder's lease runs out, or the poll interval passes. */
  async waitForChange(key: string, state: Busy<PostgresWake>, options: WaitOptions): Promise<void> {
    const wake = state.wake;
    // +1 ms: a lease ends when now() passes expires_at, not when it reaches it.
    const untilExpiry = wake?.remainingMs == null ? Infinity : Math.max(0, wake.remainingMs) + 1;
    const timeoutMs = Math.min(options.timeoutMs, this.pollIntervalMs, untilExpiry);
    await this.listener.wait(key, wake?.mark ?? -1, { signal: options.signal, timeoutMs });
  }

  async abandon(request: GrantRequest, call: CallContext): Promise<void> {
    await this.table.release(request.key, request.lockId, call.signal);
  }

  inspect(key: string, call: CallContext): Promise<LockInfo | null> {
    return this.table.inspect(key, call.signal);
  }

  list(prefix: string, call: CallContext): Promise<readonly LockInfo[]> {
    return this.table.list(prefix, call.signal);
  }

  forceRelease(key: string, call: CallContext): Promise<boolean> {
    return this.table.forceRelease(key, call.signal);
  }

  async close(call: CallContext): Promise<void> {
    this.batcher.flush();
    await this.listener.close(call.signal);
    await this.runner.close(call.signal);
  }
}
