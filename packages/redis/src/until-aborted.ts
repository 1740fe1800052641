import { BackendError } from '@holdfast/core';
import type { CallContext } from '@holdfast/core/backend';
import { untilAborted as raceAbort } from '@holdfast/core/backend';

/**
 * What bounds a piece of work: a signal, or core's call itself. A call is passed whole where its
 * signal may not be needed (a command on a connected node), because reading `call.signal` builds
 * an AbortController, which cost about as much client CPU as the Redis round trip's own work.
 */
export type Bound = AbortSignal | CallContext;

/** The bound's signal, built only now for a call. */
export function signalOf(bound: Bound): AbortSignal {
  return bound instanceof AbortSignal ? bound : bound.signal;
}

/** The error a call gets when its bound aborts first; the abort's reason is the cause. */
function abandoned(what: string, cause: unknown): BackendError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new BackendError('redis', `${what}: gave up waiting for the server (${reason})`, cause);
}

/**
 * For work of our own after the caller is gone (leaving the queue, undoing a grant): bounded by the
 * command timeout only. It never aborts, so nothing listens to it: one listener per call in flight
 * on a signal shared by every call made Node warn of a leak under contention.
 */
export const UNBOUNDED: AbortSignal = new AbortController().signal;

/** Core's untilAborted, failing with a Redis BackendError that says what was abandoned. */
export function untilAborted<T>(work: Promise<T>, bound: Bound, what: string): Promise<T> {
  if (bound === UNBOUNDED) return work;
  if (bound instanceof AbortSignal || !bound.onAbort) {
    const signal = signalOf(bound);
    return raceAbort(work, signal, (reason) => abandoned(what, reason));
  }
  const call = bound;
  return new Promise<T>((resolve, reject) => {
    call.onAbort!((reason) => {
      work.catch(() => undefined);
      reject(abandoned(what, reason));
    });
    work.then(resolve, reject);
  });
}
