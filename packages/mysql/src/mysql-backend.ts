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
import { MYSQL_CAPABILITIES } from './capabilities.js';
import { HeldSlotWatch } from './held-slot-watch.js';
import { type Holder, KeyWatch } from './key-watch.js';
import type { GrantAnswer, LockTable } from './lock-table.js';
import type { ModeTable } from './mode-table.js';
import { type GrantStatements, MysqlGrant } from './mysql-grant.js';
import type { SlotTable } from './slot-table.js';
import type { SqlRunner } from './sql-runner.js';

/** What a busy answer tells the wait that follows it: the holder it saw (token, lease left by the server's clock, a free slot or not). */
export type MysqlWake = Holder;

/** Lease mode: a row per held key (a lock, a semaphore's slots, a read-write lock's grants), a few autocommit statements per operation, polled wake-ups. */
export class MysqlBackend implements LockBackend<MysqlWake> {
  readonly name = 'mysql';
  readonly capabilities = MYSQL_CAPABILITIES;
  private readonly watch: KeyWatch;
  private readonly heldSlots: HeldSlotWatch;
  /** Renewals of plain locks falling due together go out as one batch (two statements per 1,000 locks). */
  private readonly lockRenewals: ExtendBatcher;
  private readonly lockStatements: GrantStatements;

  constructor(
    private readonly runner: SqlRunner,
    private readonly locks: LockTable,
    private readonly slots: SlotTable,
    private readonly modes: ModeTable,
    pollIntervalMs: number,
  ) {
    this.watch = new KeyWatch((key, signal) => locks.holder(key, signal), pollIntervalMs);
    this.heldSlots = new HeldSlotWatch((keys, signal) => slots.liveSlots(keys, signal), pollIntervalMs);
    this.lockRenewals = new ExtendBatcher((items, signal) => locks.extendMany(items, signal));
    this.lockStatements = {
      extend: async (key, lockId, ttlMs, signal) => (await this.lockRenewals.extend({ key, lockId, ttlMs }, signal)) !== null,
      release: (key, lockId, signal) => locks.release(key, lockId, signal),
      isHeld: (key, lockId, signal) => locks.isHeld(key, lockId, signal),
    };
  }

  async tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<MysqlWake>> {
    const answer = await this.locks.grant(request, call.signal);
    return this.outcome(
      answer,
      (lock) => new MysqlGrant(this.lockStatements, request.key, request.lockId, lock.token, lock.acquiredAt, lock.expiresAt!),
    );
  }

  async tryGrantSlot(request: SlotRequest, call: CallContext): Promise<GrantOutcome<MysqlWake>> {
    return this.outcome(await this.slots.grant(request, call.signal), (slot) => this.slotGrant(request, slot));
  }

  /** A read-write grant is a slot of its key's row (mode-statements.ts): kept, freed, checked and watched as one. */
  async tryGrantMode(request: ModeRequest, call: CallContext): Promise<GrantOutcome<MysqlWake>> {
    return this.outcome(await this.modes.grant(request, call.signal), (grant) => this.slotGrant(request, grant));
  }

  modeHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return this.modes.holders(key, call.signal);
  }

  /** A handed-off lock or slot: the grant is its key and lockId; core renews it at once, owner-checked. */
  async resumeGrant(request: GrantRequest, held: { readonly token: bigint; readonly acquiredAt: Date }): Promise<BackendGrant> {
    if (!isSlotRequest(request))
      return new MysqlGrant(this.lockStatements, request.key, request.lockId, held.token, held.acquiredAt, new Date());
    return this.slotGrant(request, { ...held, expiresAt: new Date() });
  }

  slotHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return this.slots.holders(key, call.signal);
  }

  waitForChange(key: string, state: Busy<MysqlWake>, options: WaitOptions): Promise<void> {
    return this.watch.wait(key, state.wake, options);
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
    this.watch.close();
    this.heldSlots.close();
    this.lockRenewals.flush();
    await this.runner.close(call.signal);
  }

  /** Told within a poll interval when the slot (or read-write grant) is force-released, rather than at its next renewal. */
  private slotGrant(request: GrantRequest, slot: Pick<LockInfo, 'token' | 'acquiredAt' | 'expiresAt'>): MysqlGrant {
    const what = isModeRequest(request) ? `its ${request.mode} grant` : 'its slot';
    const unwatch = this.heldSlots.watch(request.key, request.lockId, () => request.onLost(`${what} is gone: force-released or lapsed`));
    return new MysqlGrant(this.slots, request.key, request.lockId, slot.token, slot.acquiredAt, slot.expiresAt!, unwatch);
  }

  private outcome(answer: GrantAnswer, grant: (lock: LockInfo) => MysqlGrant): GrantOutcome<MysqlWake> {
    return answer.granted ? granted(grant(answer.lock)) : busy(answer.holder ?? undefined);
  }
}
