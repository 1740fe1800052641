import type { LockInfo } from '@holdfast/core';
import {
  type BackendGrant,
  type Busy,
  busy,
  type CallContext,
  ExtendBatcher,
  type GrantOutcome,
  type GrantRequest,
  granted,
  isModeRequest,
  isSlotRequest,
  type LockBackend,
  type ModeRequest,
  type SlotRequest,
  type WaitOptions,
} from '@holdfast/core/backend';
import { POSTGRES_CAPABILITIES } from './capabilities.js';

import type { LockTable } from './lock-table.js';
import type { ModeTable } from './mode-table.js';
import { type GrantStatements, PostgresGrant } from './postgres-grant.js';
import type { ReleaseListener } from './release-listener.js';
import type { GrantAnswer } from './rows.js';
import type { SlotTable } from './slot-table.js';
import type { SqlRunner } from './sql-runner.js';

/** What a busy answer tells the wait that follows it. */
export interface PostgresWake {
  /** The listener's mark taken before the attempt: a release heard after it wakes the wait at once. */
  readonly mark: number;
  /** The holder's lease left by the server's clock (a semaphore's first slot to end), or null when unknown. */
  readonly remainingMs: number | null;
}

/** Lease mode: a row per held key (a lock, a semaphore's slots, a read-write lock's grants), one statement per operation, LISTEN/NOTIFY wake-ups. */
export class PostgresBackend implements LockBackend<PostgresWake> {
  readonly name = 'postgres';
  readonly capabilities = POSTGRES_CAPABILITIES;
  private readonly batchers: ExtendBatcher[];
  private readonly lockStatements: GrantStatements;
  private readonly slotStatements: GrantStatements;

  constructor(
    private readonly runner: SqlRunner,
    private readonly locks: LockTable,
    private readonly slots: SlotTable,
    private readonly modes: ModeTable,
    private readonly listener: ReleaseListener,
    private readonly pollIntervalMs: number,
  ) {
    const lockBatcher = new ExtendBatcher((items, signal) => locks.extendMany(items, signal));
    const slotBatcher = new ExtendBatcher((items, signal) => slots.extendMany(items, signal));
    this.batchers = [lockBatcher, slotBatcher];
    this.lockStatements = {
      extend: (item, signal) => lockBatcher.extend(item, signal),
      release: locks.release.bind(locks),
      isHeld: locks.isHeld.bind(locks),
    };
    this.slotStatements = {
      extend: (item, signal) => slotBatcher.extend(item, signal),
      release: slots.release.bind(slots),
      isHeld: slots.isHeld.bind(slots),
    };
  }

  async tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<PostgresWake>> {
    const mark = this.listener.mark();
    return this.outcome(request, this.lockStatements, mark, await this.locks.grant(request, call.signal));
  }

  async tryGrantSlot(request: SlotRequest, call: CallContext): Promise<GrantOutcome<PostgresWake>> {
    const mark = this.listener.mark();
    return this.outcome(request, this.slotStatements, mark, await this.slots.grant(request, call.signal));
  }

  slotHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return this.slots.holders(key, call.signal);
  }

  /** A read-write grant is a slot of its key's row (mode-statements.ts): kept, freed and checked as one. */
  async tryGrantMode(request: ModeRequest, call: CallContext): Promise<GrantOutcome<PostgresWake>> {
    const mark = this.listener.mark();
    return this.outcome(request, this.slotStatements, mark, await this.modes.grant(request, call.signal));
  }

  modeHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return this.modes.holders(key, call.signal);
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
    const table = isSlotRequest(request) || isModeRequest(request) ? this.slots : this.locks;
    // The abandoned statement may still be running on its cut connection: undo after it ended.
    await this.runner.cutStatementsSettled(call.signal);
    await table.release(request.key, request.lockId, call.signal);
  }

  inspect(key: string, call: CallContext): Promise<LockInfo | null> {
    return this.locks.inspect(key, call.signal);
  }

  list(prefix: string, call: CallContext): Promise<readonly LockInfo[]> {
    return this.locks.list(prefix, call.signal);
  }

  forceRelease(key: string, call: CallContext): Promise<boolean> {
    return this.locks.forceRelease(key, call.signal);
  }

  async close(call: CallContext): Promise<void> {
    for (const batcher of this.batchers) batcher.flush();
    await this.listener.close(call.signal);
    await this.runner.close(call.signal);
  }

  /** A handed-off lock or slot: the grant is its key and lockId; core renews it at once, owner-checked. */
  async resumeGrant(request: GrantRequest, held: { readonly token: bigint; readonly acquiredAt: Date }): Promise<BackendGrant> {
    const statements = isSlotRequest(request) ? this.slotStatements : this.lockStatements;
    return new PostgresGrant(
      statements,
      this.listener,
      request.key,
      request.lockId,
      held.token,
      held.acquiredAt,
      new Date(),
      request.onLost,
    );
  }

  private outcome(request: GrantRequest, statements: GrantStatements, mark: number, answer: GrantAnswer): GrantOutcome<PostgresWake> {
    if (!answer.granted) return busy({ mark, remainingMs: answer.remainingMs });
    const { token, acquiredAt, expiresAt } = answer;
    return granted(new PostgresGrant(statements, this.listener, request.key, request.lockId, token, acquiredAt, expiresAt, request.onLost));
  }
}
