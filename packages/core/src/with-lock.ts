import type { AcquireOptions, Lock, LockProvider } from './types.js';

/**
 * Runs `fn` while holding `key`, releasing the lock however `fn` ends. `fn` receives the lock's
 * signal: stop the protected work when it aborts, because the lock may be gone.
 *
 * The outcome is always `fn`'s: its result, or its error. A release that fails afterwards (the
 * backend died during `fn`) does not replace it; it is reported through `lock.signal`, which then
 * aborts with a LockLostError whose `cause` is the release failure, and the lock lapses at its TTL.
 */
export async function withLock<T>(
  provider: LockProvider,
  key: string,
  fn: (signal: AbortSignal, lock: Lock) => Promise<T> | T,
  options?: AcquireOptions,
): Promise<T> {
  const lock = await provider.acquire(key, options);
  try {
    return await fn(lock.signal, lock);
  } finally {
    await lock.release().catch(() => undefined);
  }
}
