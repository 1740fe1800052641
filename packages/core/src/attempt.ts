import { type Busy, busy, type GrantRequest, type LockMode, type ModeRequest, type QueuePlace, type SlotRequest } from './backend.js';
import type { HeldLock } from './held-lock.js';
import { newLockId } from './identity.js';
import type { ValidatedAcquire } from './validation.js';

/** One acquisition in progress: its request (renewed after an abandoned call) and what it learned. */
export interface Attempt {
  /** Names the acquire in its diagnostics events (acquire, wait, grant, acquire-end), unique in the process. */
  readonly id: number;
  handle: HeldLock | undefined;
  readonly startedAt: number;
  sentAt: number;
  pendingLoss: { detail: string; cause: unknown } | undefined;
  /** The calls core stopped waiting for: leaving the queue waits until they settled (they may land late). */
  lateCall: Promise<unknown> | undefined;
  /** Those calls still without an answer: a server that does not answer them will not answer their undo either. */
  lateCallsOpen: number;
  /** The undos of those calls' grants (BackgroundWork.undoLateGrant): an acquire that gives up answers after them, within a grace. */
  lateUndo: Promise<unknown> | undefined;
  /** The last busy answer, handed to the wait that follows it. */
  busy: Busy;
  /** The backend answered "busy" at least once (diagnostics: the busy count). */
  foundBusy: boolean;
  /** Replaced (new lockId) after an abandoned call; see renewLockId(). */
  request: GrantRequest;
}

export const NOTHING_YET: Busy = busy();

let attemptsMade = 0;

/**
 * A waiting acquire (waitMs > 0) gets its place in line here, with the request, so that every
 * request has one shape (a copy with one more field made the hot path polymorphic). The place
 * is named after the first lockId, already unique.
 */
export function newAttempt(
  key: string,
  owner: string,
  validated: ValidatedAcquire,
  limit: number | undefined,
  waitMs: number,
  mode?: LockMode,
): Attempt {
  const now = Date.now();
  const onLost = (detail: string, cause?: unknown): void => {
    if (attempt.handle) attempt.handle.markLost(detail, cause);
    else attempt.pendingLoss = { detail, cause };
  };
  const { reason, ttlMs, autoRenew } = validated;
  const lockId = newLockId();
  const place: QueuePlace | undefined = waitMs > 0 ? { id: lockId, until: now + waitMs } : undefined;
  const request: GrantRequest | SlotRequest | ModeRequest =
    mode !== undefined
      ? { key, lockId, owner, reason, ttlMs, autoRenew, onLost, place, mode }
      : limit === undefined
        ? { key, lockId, owner, reason, ttlMs, autoRenew, onLost, place }
        : { key, lockId, owner, reason, ttlMs, autoRenew, onLost, place, limit };
  const attempt: Attempt = {
    id: ++attemptsMade,
    handle: undefined,
    startedAt: now,
    sentAt: now,
    pendingLoss: undefined,
    lateCall: undefined,
    lateCallsOpen: 0,
    lateUndo: undefined,
    busy: NOTHING_YET,
    foundBusy: false,
    request,
  };
  return attempt;
}

/**
 * After giving up a call, the next call of the attempt gets a new lockId, so that the late undo
 * of the abandoned one (owner-checked by lockId) can never free the new grant.
 */
export function renewLockId(attempt: Attempt): void {
  attempt.request = { ...attempt.request, lockId: newLockId() };
}

export function isModeRequest(request: GrantRequest): request is ModeRequest {
  return (request as ModeRequest).mode !== undefined;
}

export function isSlotRequest(request: GrantRequest): request is SlotRequest {
  return (request as SlotRequest).limit !== undefined;
}

/**
 * The lease is timed on the local clock from the moment the granting request was sent: the server
 * granted no earlier than that, so the holder's idea of the lease can only end before the server's
 * does. A server timestamp is never trusted for this (clocks differ).
 */
export function leaseStartOf(attempt: Attempt): number {
  return attempt.sentAt;
}
