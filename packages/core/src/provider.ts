import { setMaxListeners } from 'node:events';
import { linkedController, sleep } from './abort.js';
import type { Grant, GrantRequest, LockBackend } from './backend.js';
import { LockAbortedError, LockTimeoutError, ProviderClosedError } from './errors.js';
import { HeldLock, type HeldLockContext } from './held-lock.js';
import { defaultOwnerId, newLockId } from './identity.js';
import { TimerHeap } from './timer-heap.js';
import type { AcquireOptions, Capabilities, Lock, LockInfo, LockProvider } from './types.js';
import { type ValidatedAcquire, validateAcquireOptions, validateKey } from './validation.js';
import { toBackendError } from './wrap-backend-error.js';

export interface ProviderOptions {
  /** Identity shown as the owner of every lock this instance takes. Default `<host>:<pid>:<random>`. */
  readonly owner?: string;
  /** Retry interval while waiting, for backends that cannot wake waiters by event. Default 250 ms. */
  readonly pollIntervalMs?: number;
}

/** Longest single wait between attempts, so that a missed wake-up costs at most this much. */
const MAX_WAIT_SLICE_MS = 15_000;

/** Builds the user-facing LockProvider from an adapter's primitives. Adapters call this once. */
export function createProvider(backend: LockBackend, options: ProviderOptions = {}): LockProvider {
  return new CoreLockProvider(backend, options);
}

class CoreLockProvider implements LockProvider {
  readonly owner: string;
  private readonly timers = new TimerHeap();
  private readonly held = new Set<HeldLock>();
  private readonly closing = new AbortController();
  private readonly pollIntervalMs: number;
  /** What every lock handle of this provider shares: built once, not per grant. */
  private readonly lockContext: HeldLockContext;
  private closed: Promise<void> | undefined;

  constructor(
    private readonly backendImpl: LockBackend,
    options: ProviderOptions,
  ) {
    this.owner = options.owner ?? defaultOwnerId();
    // Every waiting acquire listens to this signal; thousands of waiters are normal, not a leak.
    setMaxListeners(0, this.closing.signal);
    this.pollIntervalMs = options.pollIntervalMs ?? 250;
    this.lockContext = { backend: backendImpl, timers: this.timers, forget: (lock) => this.held.delete(lock) };
  }

  get backend(): string {
    return this.backendImpl.name;
  }

  get capabilities(): Capabilities {
    return this.backendImpl.capabilities;
  }

  async tryAcquire(key: string, options?: AcquireOptions): Promise<Lock | null> {
    this.assertOpen();
    validateKey(key);
    const validated = validateAcquireOptions(options, this.capabilities);
    const attempt = this.newAttempt(key, validated);
    attempt.sentAt = Date.now();
    const grant = await this.call('tryAcquire', () => this.backendImpl.tryGrant(attempt.request));
    return grant ? this.adopt(attempt, grant) : null;
  }

  async acquire(key: string, options?: AcquireOptions): Promise<Lock> {
    this.assertOpen();
    validateKey(key);
    const validated = validateAcquireOptions(options, this.capabilities);
    if (validated.signal?.aborted) throw new LockAbortedError(key, validated.signal.reason);
    const { controller, dispose } = linkedController(validated.signal, this.closing.signal);
    try {
      const attempt = this.newAttempt(key, validated);
      const grant = await this.waitForGrant(attempt, validated.waitMs, controller.signal);
      return this.adopt(attempt, grant);
    } catch (error) {
      // Whatever the backend was doing when the caller or close() cancelled, the cancellation is the answer.
      if (this.closing.signal.aborted) throw new ProviderClosedError(this.backend);
      if (controller.signal.aborted) throw new LockAbortedError(key, controller.signal.reason);
      throw error;
    } finally {
      dispose();
    }
  }

  async inspect(key: string): Promise<LockInfo | null> {
    this.assertOpen();
    validateKey(key);
    return this.call('inspect', () => this.backendImpl.inspect(key));
  }

  async forceRelease(key: string): Promise<boolean> {
    this.assertOpen();
    validateKey(key);
    return this.call('forceRelease', () => this.backendImpl.forceRelease(key));
  }

  close(): Promise<void> {
    this.closed ??= this.shutdown();
    return this.closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private async shutdown(): Promise<void> {
    this.closing.abort(new ProviderClosedError(this.backend));
    await Promise.allSettled([...this.held].map((lock) => lock.release()));
    this.timers.stop();
    await this.call('close', () => this.backendImpl.close());
  }

  private async waitForGrant(attempt: Attempt, waitMs: number, signal: AbortSignal): Promise<Grant> {
    const deadline = Date.now() + waitMs;
    const backend = this.backendImpl;
    if (backend.acquireQueued) {
      attempt.sentAt = Date.now();
      const grant = await this.call('acquire', () => backend.acquireQueued!(attempt.request, { signal, deadline }));
      if (grant) return this.unlessAborted(attempt, grant, signal);
      throw new LockTimeoutError(attempt.request.key, waitMs);
    }
    for (;;) {
      attempt.sentAt = Date.now();
      const grant = await this.call('acquire', () => backend.tryGrant(attempt.request));
      if (grant) return this.unlessAborted(attempt, grant, signal);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new LockTimeoutError(attempt.request.key, waitMs);
      if (signal.aborted) throw new LockAbortedError(attempt.request.key, signal.reason);
      const slice = Math.min(remaining, MAX_WAIT_SLICE_MS);
      if (backend.waitForChange) {
        await this.call('wait', () => backend.waitForChange!(attempt.request.key, { signal, timeoutMs: slice }));
      } else {
        await sleep(Math.min(slice, this.pollIntervalMs), signal);
      }
      if (signal.aborted) throw new LockAbortedError(attempt.request.key, signal.reason);
    }
  }

  /** A grant that arrives after the caller gave up is released at once: nothing is left behind. */
  private async unlessAborted(attempt: Attempt, grant: Grant, signal: AbortSignal): Promise<Grant> {
    if (!signal.aborted) return grant;
    await this.backendImpl.release(attempt.request.key, attempt.request.lockId).catch(() => undefined);
    throw new LockAbortedError(attempt.request.key, signal.reason);
  }

  private newAttempt(key: string, validated: ValidatedAcquire): Attempt {
    const attempt: Attempt = {
      handle: undefined,
      sentAt: Date.now(),
      pendingLoss: undefined,
      request: {
        key,
        lockId: newLockId(),
        owner: this.owner,
        reason: validated.reason,
        ttlMs: validated.ttlMs,
        autoRenew: validated.autoRenew,
        onLost: (detail, cause) => {
          if (attempt.handle) attempt.handle.markLost(detail, cause);
          else attempt.pendingLoss = { detail, cause };
        },
      },
    };
    return attempt;
  }

  private async adopt(attempt: Attempt, grant: Grant): Promise<Lock> {
    if (this.closed) {
      await this.backendImpl.release(attempt.request.key, attempt.request.lockId).catch(() => undefined);
      throw new ProviderClosedError(this.backend);
    }
    // The lease is timed on the local clock from no earlier than the moment the request was sent.
    const leaseStart = Math.max(attempt.sentAt, Math.min(Date.now(), grant.acquiredAt.getTime()));
    const handle = new HeldLock(this.lockContext, attempt.request, grant, leaseStart);
    this.held.add(handle);
    attempt.handle = handle;
    if (attempt.pendingLoss) handle.markLost(attempt.pendingLoss.detail, attempt.pendingLoss.cause);
    return handle;
  }

  private async call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw toBackendError(this.backend, operation, error);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new ProviderClosedError(this.backend);
  }
}

interface Attempt {
  handle: HeldLock | undefined;
  sentAt: number;
  pendingLoss: { detail: string; cause: unknown } | undefined;
  readonly request: GrantRequest;
}
