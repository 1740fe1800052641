import type { AcquireOptions, Lock, LockProvider } from './types.js';

/**
 * Runs `fn` while holding `key`, releasing the lock however `fn` ends. `fn` receives the lock's
 * signal: stop the protected work when it aborts, because the lock may be gone.
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
    await lock.release();
  }
}
