import type { LockMode } from '@holdfast/core/backend';
import type { SlotHolder } from '../documents.js';
import type { SlotState } from './slot-state.js';

/**
 * The `limit` that marks a read-write lock's state. Semaphores have limits from 1 and plain locks
 * are no holder list at all, so the one field tells the three uses of a key apart, and an attempt
 * of one use finds the others' holders in its way (as PostgreSQL's and MySQL's `slot_limit` -1).
 */
export const READ_WRITE_LIMIT = -1;

/** The features built on holder lists, as UnsupportedError names them. */
export type HolderListFeature = 'semaphores' | 'read-write locks';

/**
 * How a grant on a key's holder list (a state of version records: slot-state.ts) shares the key:
 * a slot of a semaphore of some limit, or a read-write lock's grant in some mode. One grant pass
 * (slot-pass.ts) serves both; only the room it needs differs.
 */
export interface KeyUse {
  readonly feature: HolderListFeature;
  /** The `limit` a state of this use records: the semaphore's limit, or READ_WRITE_LIMIT. */
  readonly limit: number;
  /** Read-write grants only: written into the holder entry, which the room of later grants looks at. */
  readonly mode?: LockMode;
  /** Whether one more grant of this use fits beside these holders (all of them, or the live ones once judged). */
  fits(holders: readonly SlotHolder[]): boolean;
}

export function semaphoreUse(limit: number): KeyUse {
  return { feature: 'semaphores', limit, fits: (holders) => holders.length < limit };
}

/** A reader fits while no writer holds the key, a writer only while nobody does. */
export function readWriteUse(mode: LockMode): KeyUse {
  const fits =
    mode === 'exclusive'
      ? (holders: readonly SlotHolder[]) => holders.length === 0
      : (holders: readonly SlotHolder[]) => !holders.some((holder) => holder.mode === 'exclusive');
  return { feature: 'read-write locks', limit: READ_WRITE_LIMIT, mode, fits };
}

export function isReadWriteState(state: SlotState): boolean {
  return state.limit === READ_WRITE_LIMIT;
}

export function featureOf(limit: number): HolderListFeature {
  return limit === READ_WRITE_LIMIT ? 'read-write locks' : 'semaphores';
}

/** How a holder list of `limit` uses its key, for conflict messages. */
export function inUseAs(limit: number): string {
  return limit === READ_WRITE_LIMIT ? 'a read-write lock' : `a semaphore with limit ${limit}`;
}
