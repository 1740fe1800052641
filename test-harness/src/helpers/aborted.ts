import { type What, whatText } from './within.js';

/**
 * Resolves with the signal's reason once it aborts (at once if it already has); rejects naming `what`
 * if it has not aborted within `withinMs`. The listener and the timer are removed either way.
 */
export function abortedWithin(signal: AbortSignal, withinMs: number, what: What = 'the signal aborts'): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      reject(new Error(`${whatText(what)}: signal did not abort within ${Math.round(withinMs)} ms`));
    }, withinMs);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A lock's holder being told it lost the lock: {@link abortedWithin} on `lock.signal`, resolving with the reason. */
export function lostWithin(
  lock: { readonly signal: AbortSignal },
  withinMs: number,
  what: What = 'the holder is told it lost the lock',
): Promise<unknown> {
  return abortedWithin(lock.signal, withinMs, what);
}

/**
 * Records when `signal` aborts (performance.now()), so a test can compare that moment with others; the
 * getter answers undefined while it has not aborted. It does not wait: pair it with {@link abortedWithin}.
 */
export function abortTime(signal: AbortSignal): () => number | undefined {
  let at: number | undefined = signal.aborted ? performance.now() : undefined;
  if (at === undefined) signal.addEventListener('abort', () => (at = performance.now()), { once: true });
  return () => at;
}
