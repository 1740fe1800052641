import type { LockMode } from '@holdfast/core/backend';
import { ObjectId } from 'mongodb';
import { LOCKED, type LockDocument, SLOTS, type SlotHolder } from '../documents.js';
import type { Acquisition } from '../lock-catalog.js';
import { inUseAs } from './key-use.js';
import type { LockFields } from './records.js';

/** A key's state when it is a holder list (a semaphore, or a read-write lock: key-use.ts): its limit and holders, oldest first. */
export type SlotState = LockDocument & { state: typeof SLOTS; limit: number; holders: SlotHolder[] };

export function isSlotState(lock: LockDocument | null | undefined): lock is SlotState {
  return lock?.state === SLOTS;
}

/** Whether `lock` (a key's latest state) is still held by the acquisition `ts`, as a lock or as a slot. */
export function holdsIn(lock: LockDocument | null | undefined, ts: ObjectId): boolean {
  if (isSlotState(lock)) return lock.holders.some((holder) => holder.ts.equals(ts));
  return lock?.state === LOCKED && lock.ts.equals(ts);
}

/**
 * Thrown by a lock grab that meets a holder list with holders (a semaphore or a read-write lock): the
 * backend judges whether they are all expired (the key is free then) or the key is in use so (a conflict).
 */
export class KeyHasSlots extends Error {
  constructor(readonly state: SlotState) {
    super(`"${state._id}" is in use as ${inUseAs(state.limit)}`);
    this.name = 'KeyHasSlots';
  }
}

/** A new holder entry for this acquisition, with the key's next token (and, for a read-write grant, its mode). */
export function holderFor(acquisition: Acquisition, processId: string, fence: number, mode?: LockMode): SlotHolder {
  const { ts, lockId, who, why, lease, renew } = acquisition;
  const holder: SlotHolder = { ts, lockId, process: processId, who, why, when: new Date(), fence, lease, renew };
  if (mode) holder.mode = mode;
  return holder;
}

/**
 * The next holder-list state of a key (a semaphore's, or a read-write lock's with `limit` -1). The top-level fields name no holder (no process, a ts of its
 * own), so that nothing written for plain locks (orphan sweep, expiry, list) ever takes it for one.
 */
export function slotStateFields(limit: number, holders: SlotHolder[], fence: number | bigint | undefined): LockFields {
  return { state: SLOTS, process: '', ts: new ObjectId(), who: '', why: '', when: new Date(), fence: Number(fence ?? 0), limit, holders };
}
