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
  const { signal } = bound;
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(abortReason(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

export function throwIfAborted(bound: Bound): void {
  if (bound.signal?.aborted) throw abortReason(bound.signal);
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('aborted');
}
