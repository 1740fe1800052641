import { BackendError } from '@holdfast/core';
import { type CallContext, untilAborted as raceAbort } from '@holdfast/core/backend';

/**
 * For work of our own after the caller is gone (leaving nothing behind: undoing a grant, a
 * repair): bounded by the command timeout only. It never aborts, so nothing listens to it: one
 * listener per call in flight on a signal shared by every call made Node warn of a leak under contention.
 */
export const BACKGROUND: CallContext = Object.freeze({ signal: new AbortController().signal, onAbort: () => undefined });

/** The error a call gets when it aborts first; the abort's reason is the cause. */
function abandoned(what: string, cause: unknown): BackendError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new BackendError('redis', `${what}: gave up waiting for the server (${reason})`, cause);
}

/**
 * Core's untilAborted, failing with a Redis BackendError that says what was abandoned. A call with
 * onAbort is raced without reading its `signal`: that builds an AbortController, which costs about
 * as much client CPU as the Redis round trip's own work.
 */
export function untilAborted<T>(work: Promise<T>, call: CallContext, what: string): Promise<T> {
  if (call === BACKGROUND) return work;
  if (!call.onAbort) return raceAbort(work, call.signal, (reason) => abandoned(what, reason));
  return new Promise<T>((resolve, reject) => {
    call.onAbort!((reason) => {
      work.catch(() => undefined);
      reject(abandoned(what, reason));
    });
    work.then(resolve, reject);
  });
}
