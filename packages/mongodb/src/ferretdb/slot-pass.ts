import { LockConflictError } from '@holdfast/core';
import type { CallContext } from '@holdfast/core/backend';
import { MongoServerSelectionError, type ObjectId } from 'mongodb';
import { LOCKED, type SlotHolder } from '../documents.js';
import type { ExpiryCheck } from '../expiry-check.js';
import type { PassOutcome } from '../grant-pass.js';
import type { Acquisition } from '../lock-catalog.js';
import { inUseAs, type KeyUse } from './key-use.js';
import type { SlotCatalog } from './slot-catalog.js';
import type { SlotJudge } from './slot-judge.js';
import { isSlotState } from './slot-state.js';

/** Takes re-read after losing the race for the next version, before answering busy (the waiter tries again at once). */
const TAKE_ATTEMPTS = 4;

export interface SlotPassParts {
  readonly slots: SlotCatalog;
  readonly judge: SlotJudge;
  readonly expiry: ExpiryCheck;
  /** Queues an unlock by ts for the pinger to retry until the server confirms it. */
  unlockSoon(key: string, ts: ObjectId): void;
}

/**
 * One attempt at a grant on the key's holder list, of `use` (key-use.ts: a semaphore's slot or a
 * read-write lock's grant): read the key's latest state; a plain lock still held is a conflict; a
 * holder list of another use (another limit) with a live holder is a conflict; when this grant does
 * not fit beside the holders, judge them (../expiry.ts) and count only the live ones; if it fits,
 * commit the next state with this acquisition added (and the expired holders dropped). The commit
 * is the insert of the version after the one read, so two grants that both saw room cannot both
 * land (version-chain.ts). The pass settles only once no write of it can still land.
 */
export async function slotPass(parts: SlotPassParts, acquisition: Acquisition, use: KeyUse, call: CallContext): Promise<PassOutcome> {
  const { key } = acquisition;
  for (let attempt = 0; attempt < TAKE_ATTEMPTS; attempt++) {
    const read = await parts.slots.head(key, call);
    const { current } = read;
    let holders: SlotHolder[] = [];
    let judgeableAt: number | undefined;
    if (current?.state === LOCKED) {
      const verdict = await parts.expiry.observe(current, call);
      if (!verdict.expired) throw new LockConflictError(key, `it is held as a plain lock, not as ${inUseAs(use.limit)}`);
    } else if (isSlotState(current)) {
      holders = current.holders;
      if (current.limit !== use.limit || !use.fits(holders)) {
        ({ live: holders, judgeableAt } = await parts.judge.judge(key, holders, call));
        if (current.limit !== use.limit && holders.length > 0) {
          throw new LockConflictError(key, `it is in use as ${inUseAs(current.limit)}, not as ${inUseAs(use.limit)}`);
        }
      }
    }
    if (!use.fits(holders)) return { busy: { holder: current, judgeableAt } };
    const taken = await unlessUnknown(parts, acquisition, () => parts.slots.take(acquisition, read, use, holders, call));
    if (taken) {
      if (current?.state === LOCKED) parts.expiry.forget(key);
      return { granted: taken };
    }
  }
  return { busy: { holder: null, judgeableAt: Date.now() } };
}

async function unlessUnknown<T>(parts: SlotPassParts, acquisition: Acquisition, command: () => Promise<T>): Promise<T> {
  try {
    return await command();
  } catch (error) {
    // The take may have landed: free it by its ts once the server answers (nothing was sent when no server could be selected).
    if (!(error instanceof MongoServerSelectionError)) parts.unlockSoon(acquisition.key, acquisition.ts);
    throw error;
  }
}
