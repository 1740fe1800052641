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
 *
 * Core's call.signal already bounds every backend call: core stops waiting at that moment whatever
 * the adapter does, and reads pass the signal to the driver. This is for what that leaves out: work
 * that cannot take the call's signal, when the adapter's own flow must go on or stop at the bound.
 * The shared connect (one caller's abort must not end it for the others), writes (sent without the
 * signal by design, see mongod-catalog.ts, so a release knows to queue its unlock once the write settled),
 * and close() (which must go on to close the client when its time is up). A read as a call's last
 * step needs none of it.
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
