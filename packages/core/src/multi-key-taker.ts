import { linkedController } from './abort.js';
import { InvalidArgumentError, LockAbortedError, LockLostError, LockTimeoutError } from './errors.js';
import { HeldKeys } from './multi-lock.js';
import type { AcquireOptions, Lock, LockProvider, MultiLock } from './types.js';
import { validateAcquireOptions, validateKey } from './validation.js';

/** The most keys one multi-key lock may take: each is a lock with its own renewal. */
export const MAX_KEYS_PER_MULTI_LOCK = 100;

/**
 * Several keys all or none, composed of the provider's own locks, so it works on every backend.
 * Keys are taken one by one in one canonical order (sorted by UTF-16 code units, the order `<`
 * gives): two callers whose sets overlap then meet at their first common key, and whoever gets it
 * takes the rest before the other can hold any of them, so nobody waits in a cycle.
 */
export class MultiKeyTaker {
  constructor(private readonly provider: LockProvider) {}

  async tryTakeAll(keys: readonly string[], options: AcquireOptions | undefined): Promise<MultiLock | null> {
    const sorted = this.validated(keys, options);
    const taken: Lock[] = [];
    try {
      for (const key of sorted) {
        const lock = await this.provider.tryAcquire(key, options);
        if (!lock) {
          await releaseQuietly(taken);
          return null;
        }
        taken.push(lock);
        throwIfLost(taken);
      }
    } catch (error) {
      await releaseQuietly(taken);
      throw error;
    }
    return new HeldKeys(taken);
  }

  async takeAll(keys: readonly string[], options: AcquireOptions | undefined): Promise<MultiLock> {
    const sorted = this.validated(keys, options);
    const waitMs = validateAcquireOptions(options, this.provider.capabilities, 'raise').waitMs;
    const deadline = Date.now() + waitMs;
    const taken: Lock[] = [];
    // Losing a key already taken while waiting for the next one ends the wait: the set can no longer be whole.
    const { controller, dispose } = linkedController(options?.signal);
    const detach: (() => void)[] = [];
    try {
      for (const key of sorted) {
        const remaining = waitMs === 0 ? 0 : deadline - Date.now();
        if (waitMs !== 0 && remaining <= 0) throw new LockTimeoutError(key, waitMs);
        const lock = await this.provider.acquire(key, { ...options, waitMs: remaining, signal: controller.signal }).catch((error) => {
          throw explained(error, key, waitMs, taken, options?.signal);
        });
        taken.push(lock);
        const onLost = (): void => controller.abort(lock.signal.reason);
        lock.signal.addEventListener('abort', onLost, { once: true });
        detach.push(() => lock.signal.removeEventListener('abort', onLost));
        throwIfLost(taken);
      }
    } catch (error) {
      await releaseQuietly(taken);
      throw error;
    } finally {
      dispose();
      for (const undo of detach) undo();
    }
    return new HeldKeys(taken);
  }

  /** Bad input is refused before the backend is touched: keys one by one, duplicates, then the options. */
  private validated(keys: readonly string[], options: AcquireOptions | undefined): string[] {
    if (!Array.isArray(keys)) throw new InvalidArgumentError('keys', 'expected an array of keys');
    if (keys.length === 0) throw new InvalidArgumentError('keys', 'expected at least one key');
    if (keys.length > MAX_KEYS_PER_MULTI_LOCK) {
      throw new InvalidArgumentError('keys', `at most ${MAX_KEYS_PER_MULTI_LOCK} keys, got ${keys.length}`);
    }
    for (const key of keys) validateKey(key);
    const sorted = [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (let i = 1; i < sorted.length; i++) {
      // Taking one key twice would wait on itself (or be two grants of one key): refused, not merged.
      if (sorted[i] === sorted[i - 1]) throw new InvalidArgumentError('keys', `"${sorted[i]}" is listed twice`);
    }
    const validated = validateAcquireOptions(options, this.provider.capabilities, 'raise');
    if (validated.signal?.aborted) throw new LockAbortedError(sorted[0]!, validated.signal.reason);
    return sorted;
  }
}

/** A key lost while the set was being taken: the caller is told which, and gets nothing. */
function throwIfLost(taken: readonly Lock[]): void {
  for (const lock of taken) {
    if (lock.signal.aborted) throw new LockLostError(lock.key, 'it was lost before every key was taken', lock.signal.reason);
  }
}

/** Why the wait for `key` ended: a timeout of the whole wait, the caller's abort, or a key lost meanwhile. */
function explained(error: unknown, key: string, waitMs: number, taken: readonly Lock[], callerSignal: AbortSignal | undefined): unknown {
  if (error instanceof LockTimeoutError) return new LockTimeoutError(key, waitMs);
  if (error instanceof LockAbortedError && !callerSignal?.aborted) {
    const lost = taken.find((lock) => lock.signal.aborted);
    if (lost) return new LockLostError(lost.key, `it was lost while waiting for "${key}"`, lost.signal.reason);
  }
  return error;
}

async function releaseQuietly(taken: readonly Lock[]): Promise<void> {
  await Promise.allSettled(taken.map((lock) => lock.release()));
}
