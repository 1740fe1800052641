import { linkedController } from './abort.js';
import { parseDuration } from './duration.js';
import { ErrorCode, InvalidArgumentError, isHoldfastError } from './errors.js';
import { handOffUnsupported } from './hand-off.js';
import type { Lock, LockProvider } from './types.js';

/** A duration in ms, or text such as "30s" or "10m". */
export type Duration = number | string;

export interface RunExclusiveOptions {
  /**
   * The longest the lock is held, even if the job hangs or its process dies: the lease, never
   * renewed. The job's signal aborts before it runs out (at nine tenths, the lease's safety margin).
   * Without it the lock is renewed while the job runs (a lease of `ttlMs`), as by withLock.
   */
  readonly atMostFor?: Duration;
  /** Without atMostFor: the renewed lease's length. Default: the backend's. */
  readonly ttlMs?: number;
  /**
   * The shortest the lock is held, counted from the grant: a job that ends sooner leaves the lock
   * in place until then, so that an instance whose clock or schedule is a little behind does not run
   * the job again. Default 0.
   */
  readonly atLeastFor?: Duration;
  /** How long to wait for the key when another instance runs the job. Default 0: skip this run. */
  readonly waitMs?: number;
  /** As acquire's: with waitMs, retry a backend that has never answered instead of failing at once. */
  readonly waitForBackend?: boolean;
  /** Shown by inspect() and `holdfast list`. */
  readonly reason?: string;
  /** Cancels the wait, and aborts the job's signal. */
  readonly signal?: AbortSignal;
}

/** What runExclusive answers: the job ran here (its value and the lock's token), or another instance held the key. */
export type RunExclusiveResult<T> =
  | { readonly ran: true; readonly value: T; readonly token: bigint }
  | { readonly ran: false; readonly value?: undefined };

/**
 * Runs a scheduled job on one instance at a time, the way ShedLock does: `job` runs only if `key`
 * can be taken (else `{ ran: false }`), under a lease of `atMostFor` that is never renewed, with a
 * signal that aborts before that lease runs out. When it ends before `atLeastFor`, the lock is not
 * released but moved to expire at the `atLeastFor` point (extend), and let go (handOff): no timer
 * keeps the process alive and close() does not free it. Where a backend's locks live on a session
 * or ping instead of a lease (Consul, MongoDB, PostgreSQL session mode) the lock is held, with a
 * timer, until that point and then released. docs/scheduled-jobs.md explains the choice.
 */
export async function runExclusive<T>(
  provider: LockProvider,
  key: string,
  job: (signal: AbortSignal, lock: Lock) => Promise<T> | T,
  options: RunExclusiveOptions = {},
): Promise<RunExclusiveResult<T>> {
  const { atMostMs, atLeastMs } = bounds(options);
  let lock: Lock;
  try {
    lock = await provider.acquire(key, {
      ...(atMostMs === undefined ? (options.ttlMs === undefined ? {} : { ttlMs: options.ttlMs }) : { ttlMs: atMostMs, autoRenew: false }),
      waitMs: options.waitMs ?? 0,
      ...(options.reason === undefined ? {} : { reason: options.reason }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.waitForBackend === undefined ? {} : { waitForBackend: options.waitForBackend }),
    });
  } catch (error) {
    if (isHoldfastError(error, ErrorCode.Timeout)) return { ran: false };
    throw error;
  }
  const atLeastUntil = Date.now() + atLeastMs;
  // AbortSignal.any is Node 20.3+; the engines field says 20.
  const linked = options.signal ? linkedController(lock.signal, options.signal) : undefined;
  try {
    const value = await job(linked?.controller.signal ?? lock.signal, lock);
    return { ran: true, value, token: lock.token };
  } finally {
    linked?.dispose();
    await keepUntil(provider, lock, atLeastUntil);
  }
}

/** After the job: release, or leave the lock to lapse at the at-least point. */
async function keepUntil(provider: LockProvider, lock: Lock, until: number): Promise<void> {
  const remaining = until - Date.now();
  if (remaining <= 0 || lock.signal.aborted) {
    await lock.release().catch(() => undefined);
    return;
  }
  if (handOffUnsupported(provider.capabilities) === undefined) {
    try {
      // The lease now ends at the at-least point (or the backend's shortest lease, a little later).
      await lock.extend(Math.max(Math.ceil(remaining), provider.capabilities.minTtlMs));
      lock.handOff();
      return;
    } catch {
      // Not extended (lost, or the backend failed): nothing is left to keep.
      await lock.release().catch(() => undefined);
      return;
    }
  }
  await new Promise((resolve) => setTimeout(resolve, remaining));
  await lock.release().catch(() => undefined);
}

function bounds(options: RunExclusiveOptions): { atMostMs: number | undefined; atLeastMs: number } {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected { atMostFor?, atLeastFor? }');
  const atMostMs = options.atMostFor === undefined ? undefined : duration(options.atMostFor, 'atMostFor');
  const atLeastMs = options.atLeastFor === undefined ? 0 : duration(options.atLeastFor, 'atLeastFor', true);
  if (atMostMs !== undefined && atLeastMs > atMostMs) {
    throw new InvalidArgumentError('atLeastFor', `${atLeastMs} ms is longer than atMostFor (${atMostMs} ms)`);
  }
  return { atMostMs, atLeastMs };
}

function duration(value: unknown, name: string, zeroAllowed = false): number {
  const ms = typeof value === 'string' ? parseDuration(value, name) : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || (ms === 0 && !zeroAllowed)) {
    throw new InvalidArgumentError(name, `expected a positive duration (ms or text like "30s"), got ${String(value)}`);
  }
  return Math.ceil(ms);
}
