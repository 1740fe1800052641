import { DEFAULT_CALL_TIMEOUT_MS, linkedController } from '@holdfast/core/backend';

/**
 * One background call (a poll's look), bounded like any backend call and by `stopped`. Rejects with
 * `stopped`'s reason once it aborts, so that a failure and a shutdown stay apart.
 *
 * Not core's call.signal, on purpose: these looks run under no core call. One poll per key serves
 * every waiter of it (key-watch.ts) and one per provider checks every held slot (held-slot-watch.ts),
 * so no caller's signal may end them; they end with the watch (`stopped`) or the timeout.
 */
export async function boundedCall<T>(stopped: AbortSignal, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const { controller, dispose } = linkedController(stopped);
  const timer = setTimeout(() => controller.abort(new Error('no answer')), DEFAULT_CALL_TIMEOUT_MS);
  try {
    return await work(controller.signal);
  } catch (error) {
    if (stopped.aborted) throw stopped.reason;
    throw error;
  } finally {
    clearTimeout(timer);
    dispose();
  }
}
