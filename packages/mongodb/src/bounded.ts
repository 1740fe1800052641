import { setMaxListeners } from 'node:events';
import { untilAborted } from '@holdfast/core/backend';

/** What bounds one catalog command: the caller's signal (absent for the pinger's own work). */
export interface Bound {
  readonly signal?: AbortSignal | undefined;
}

/**
 * Settles with `work`, or rejects with the signal's reason as soon as it aborts, leaving `work` to
 * finish on its own (a write already sent may still reach the server: whoever abandons a grab this
 * way frees it once `work` has settled).
 */
export function bounded<T>(bound: Bound, work: Promise<T>): Promise<T> {
  return untilAborted(work, bound.signal);
}

export function throwIfAborted(bound: Bound): void {
  bound.signal?.throwIfAborted();
}

/**
 * For a signal that bounds many commands at once (a listing, the holder check, close): the driver
 * adds an abort listener per command, which is no leak here.
 */
export function allowManyListeners(bound: Bound): void {
  if (bound.signal) setMaxListeners(0, bound.signal);
}
