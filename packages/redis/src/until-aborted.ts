import { BackendError } from '@holdfast/core';
import { untilAborted as raceAbort } from '@holdfast/core/backend';

/** The error a call gets when its signal aborts first; the signal's reason is the cause. */
export function abandoned(what: string, signal: AbortSignal): BackendError {
  const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
  return new BackendError('redis', `${what}: gave up waiting for the server (${reason})`, signal.reason);
}

/**
 * For work of our own after the caller is gone (leaving the queue, undoing a grant): bounded by the
 * command timeout only. It never aborts, so nothing listens to it: one listener per call in flight
 * on a signal shared by every call made Node warn of a leak under contention.
 */
export const UNBOUNDED: AbortSignal = new AbortController().signal;

/** Core's untilAborted, failing with a Redis BackendError that says what was abandoned. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal, what: string): Promise<T> {
  if (signal === UNBOUNDED) return work;
  return raceAbort(work, signal, () => abandoned(what, signal));
}
