import type { CallContext, GrantRequest } from '@holdfast/core/backend';
import { MongoServerSelectionError, ObjectId } from 'mongodb';
import { type LockDocument, UNLOCKED } from './documents.js';
import { isNetworkError } from './driver-errors.js';
import type { ExpiryCheck } from './expiry-check.js';
import { KeyHasSlots } from './ferretdb/index.js';
import type { Acquisition, LockCatalog } from './lock-catalog.js';

/** Immediate retries of a grab after a network error (lockWithSessionID's kMaxNumLockAcquireRetries). */
const NETWORK_RETRIES = 2;

/** The wait hint of a busy answer: what held the key, and when a takeover could next be judged. */
export interface MongoWake {
  /** The lock document that made the attempt busy (null: it vanished meanwhile). */
  readonly holder: LockDocument | null;
  /** Local time from which another observation could find the holder expired; undefined when none is pending. */
  readonly judgeableAt: number | undefined;
}

export type PassOutcome = { readonly granted: LockDocument } | { readonly busy: MongoWake };

export interface PassParts {
  readonly catalog: LockCatalog;
  readonly expiry: ExpiryCheck;
  /** Queues an unlock by ts for the pinger to retry until the server confirms it. */
  unlockSoon(key: string, ts: ObjectId): void;
}

/** The fields one pass writes. Each pass has a ts of its own, so an unlock queued for one never frees another. */
export function acquisitionFor(request: GrantRequest, processId: string): Acquisition {
  return {
    key: request.key,
    ts: new ObjectId(),
    lockId: request.lockId,
    who: `${processId}:${request.owner}`,
    why: request.reason ?? '',
    lease: request.ttlMs,
    renew: request.autoRenew,
  };
}

/**
 * One pass of MongoDB's lockWithSessionID: grab; busy -> read the lock; if it is free, carries this
 * pass's own ts, or is expired by the two-observation rule -> overtake; else busy. Reads take the
 * caller's signal; a write once sent is left to finish, so the pass settles only when nothing of it
 * can still land.
 */
export async function grantPass(parts: PassParts, acquisition: Acquisition, call: CallContext): Promise<PassOutcome> {
  const { catalog, expiry } = parts;
  const grabbed = await grab(parts, acquisition, call);
  if (grabbed) return { granted: grabbed };
  const current = await catalog.getLockByName(acquisition.key, call);
  if (!current) return { busy: { holder: null, judgeableAt: undefined } };
  let judgeableAt: number | undefined;
  if (current.state !== UNLOCKED && !current.ts.equals(acquisition.ts)) {
    const verdict = await expiry.observe(current, call);
    if (!verdict.expired) return { busy: { holder: current, judgeableAt: verdict.judgeableAt } };
  }
  const taken = await unlessUnknown(parts, acquisition, () => catalog.overtakeLock(acquisition, current.ts, call));
  return taken ? { granted: taken } : { busy: { holder: current, judgeableAt } };
}

/** grabLock with lockWithSessionID's error rules: network error = unlock and retry at once, at most twice. */
async function grab(parts: PassParts, acquisition: Acquisition, call: CallContext): Promise<LockDocument | null> {
  for (let retry = 0; ; retry++) {
    try {
      return await parts.catalog.grabLock(acquisition, call);
    } catch (error) {
      if (!isNetworkError(error) || retry >= NETWORK_RETRIES || call.signal.aborted) return unknownState(parts, acquisition, error);
      try {
        await parts.catalog.unlock(acquisition, call);
      } catch (unlockError) {
        return unknownState(parts, acquisition, unlockError);
      }
    }
  }
}

async function unlessUnknown(
  parts: PassParts,
  acquisition: Acquisition,
  command: () => Promise<LockDocument | null>,
): Promise<LockDocument | null> {
  try {
    return await command();
  } catch (error) {
    return unknownState(parts, acquisition, error);
  }
}

/** The command may have taken the lock: queue an unlock of this pass's ts and fail the attempt. */
function unknownState(parts: PassParts, acquisition: Acquisition, error: unknown): never {
  // Nothing reached the server when no server could be selected: the state is known, unchanged.
  // Nor when the grab met a holder list (a semaphore, a read-write lock): it wrote nothing.
  if (!(error instanceof MongoServerSelectionError) && !(error instanceof KeyHasSlots)) parts.unlockSoon(acquisition.key, acquisition.ts);
  throw error;
}
