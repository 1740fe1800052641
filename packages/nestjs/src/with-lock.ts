import { ErrorCode, InvalidArgumentError, isHoldfastError } from '@holdfast/core';
import { runWithLock } from './current-lock.js';
import { providerOf, replaceMethod } from './decorated-method.js';
import { compileKeyTemplate, type KeyTemplate } from './key-template.js';

/** What `@WithLock` does when the key stays busy for `waitMs`. */
export type BusyBehaviour = 'throw' | 'skip';

/** How a `@WithLock` method takes its key. */
export interface WithLockOptions {
  /**
   * How long a call waits for a busy key, in ms. Default 0: one attempt, because a request handler
   * that waits forever for a stuck lock hangs its client. Pass Infinity to wait without bound.
   */
  readonly waitMs?: number;
  /** Lease length in ms, renewed while the method runs. Default: the backend's. */
  readonly ttlMs?: number;
  /**
   * Still busy after `waitMs`: 'throw' (default) rejects with core's LockTimeoutError
   * (code HOLDFAST_TIMEOUT); 'skip' resolves to undefined without running the method.
   * A failed backend always rejects (a BackendError), so busy and broken stay distinguishable.
   */
  readonly onBusy?: BusyBehaviour;
  /** Shown by inspect() and `holdfast list`. Default: "Class.method". */
  readonly reason?: string;
  /** As acquire's: with waitMs, retry a backend that has never answered instead of failing at once. */
  readonly waitForBackend?: boolean;
}

/**
 * Runs the method while holding the key built from its arguments (`'order:{0.id}'`,
 * `'user:{1.user.name}'`, or a function of the arguments), and releases it when the method's promise
 * settles. The method becomes async. Inside, `currentLock()` is the lock; its signal aborts if the
 * lock is lost. The instance must be created by Nest, with HoldfastModule imported (or global).
 */
export function WithLock(key: KeyTemplate, options: WithLockOptions = {}): MethodDecorator {
  const buildKey = compileKeyTemplate(key);
  const onBusy = checkOptions(options);
  return (prototype, name, descriptor) =>
    replaceMethod('WithLock', prototype, name, descriptor, (original) => {
      const reason = options.reason ?? `${prototype.constructor.name}.${String(name)}`;
      return async function (this: unknown, ...args: unknown[]) {
        const provider = providerOf(this, 'WithLock', name);
        let lock: Awaited<ReturnType<typeof provider.acquire>>;
        try {
          lock = await provider.acquire(buildKey(args), {
            waitMs: options.waitMs === Infinity ? undefined : (options.waitMs ?? 0),
            reason,
            ...(options.ttlMs === undefined ? {} : { ttlMs: options.ttlMs }),
            ...(options.waitForBackend === undefined ? {} : { waitForBackend: options.waitForBackend }),
          });
        } catch (error) {
          if (onBusy === 'skip' && isHoldfastError(error, ErrorCode.Timeout)) return undefined;
          throw error;
        }
        try {
          return await runWithLock(lock, () => original.apply(this, args));
        } finally {
          // As core's withLock: a failed release does not replace the method's outcome; the lock's
          // signal reports it and the lease lapses.
          await lock.release().catch(() => undefined);
        }
      };
    }) as never;
}

function checkOptions(options: WithLockOptions): BusyBehaviour {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected { waitMs?, ttlMs?, onBusy? }');
  const onBusy = options.onBusy ?? 'throw';
  if (onBusy !== 'throw' && onBusy !== 'skip')
    throw new InvalidArgumentError('onBusy', `expected 'throw' or 'skip', got ${String(onBusy)}`);
  return onBusy;
}
