import { setMaxListeners } from 'node:events';
import { linkedController, pause, sleep } from './abort.js';
import { type BackendGrant, type Busy, type CallContext, type GrantOutcome, type GrantRequest, type LockBackend, type SlotRequest, busy } from './backend.js';
import { BackendCaller, DEFAULT_CALL_TIMEOUT_MS } from './backend-caller.js';
import {
  BackendError,
  ErrorCode,
  HoldfastError,
  InvalidArgumentError,
  LockAbortedError,
  LockTimeoutError,
  ProviderClosedError,
  UnsupportedError,
} from './errors.js';
import { CHANNELS, type Logger, publish } from './diagnostics.js';
import { HeldLock, type HeldLockContext } from './held-lock.js';
import { safetyDeadline } from './renewal-policy.js';
import { defaultOwnerId, newLockId } from './identity.js';
import { TimerHeap } from './timer-heap.js';
import type { AcquireOptions, Capabilities, ElectOptions, Election, ListOptions, Lock, LockInfo, LockProvider, ObserveOptions, Semaphore } from './types.js';
import { CampaigningElection, type LeaderWork } from './election.js';
import { observeHolder } from './observe.js';
import { type TtlPolicy, type ValidatedAcquire, validateAcquireOptions, validateKey, validateLimit, validateListOptions } from './validation.js';
import { toBackendError } from './wrap-backend-error.js';

export interface ProviderOptions {
  /** Identity shown as the owner of every lock this instance takes. Default `<host>:<pid>:<random>`. */
  readonly owner?: string;
  /** Retry interval while waiting, for backends that cannot wake waiters by event. Default 250 ms. */
  readonly pollIntervalMs?: number;
  /**
   * Longest time one backend call may take before the caller gets a BackendError, in ms, whatever
   * the server does (hung, unreachable, a write stalled on the way). Default 5000.
   */
  readonly callTimeoutMs?: number;
  /** Longest time close() takes, in ms; locks whose release is not confirmed by then are reported lost. Default 5000. */
  readonly closeTimeoutMs?: number;
  /**
   * A `ttlMs` below the backend's minimum is raised to it ('raise', the default: the same code runs
   * on every backend) or rejected with InvalidArgumentError ('reject').
   */
  readonly ttlBelowMinimum?: TtlPolicy;
  /** Warnings (renewal failures, lost locks, unconfirmed releases) go here; pino-style `warn(fields, message)`. */
  readonly logger?: Logger;
}

/** The provider-level settings out of an app's options, for adapters' factories. */
export function providerOptions(options: {
  readonly owner?: string | undefined;
  readonly callTimeoutMs?: number | undefined;
  readonly closeTimeoutMs?: number | undefined;
  readonly ttlBelowMinimum?: TtlPolicy | undefined;
  readonly logger?: Logger | undefined;
}): ProviderOptions {
  const picked: { owner?: string; callTimeoutMs?: number; closeTimeoutMs?: number; ttlBelowMinimum?: TtlPolicy; logger?: Logger } = {};
  if (options.logger !== undefined) picked.logger = options.logger;
  if (options.owner !== undefined) picked.owner = options.owner;
  if (options.ttlBelowMinimum !== undefined) picked.ttlBelowMinimum = options.ttlBelowMinimum;
  if (options.callTimeoutMs !== undefined) picked.callTimeoutMs = options.callTimeoutMs;
  if (options.closeTimeoutMs !== undefined) picked.closeTimeoutMs = options.closeTimeoutMs;
  return picked;
}

/** Longest single wait between attempts, so that a missed wake-up costs at most this much. */
const MAX_WAIT_SLICE_MS = 15_000;
/** How long past its own timeout a wake-up wait may run before core stops waiting for it. */
const WAIT_OVERRUN_MS = 1000;
const MAX_RETRY_DELAY_MS = 1000;
const DEFAULT_POLL_INTERVAL_MS = 250;
export const DEFAULT_CLOSE_TIMEOUT_MS = 5000;
/** Even a close() that spent its budget on releases gives the adapter this long to drop its connections. */
const MIN_CLOSE_SLICE_MS = 50;
/** A lost grant is let go of for at least twice this long, whatever its TTL. */
const MIN_LET_GO_WINDOW_MS = 10_000;

/** Builds the user-facing LockProvider from an adapter's primitives. Adapters call this once. */
export function createProvider(backend: LockBackend, options: ProviderOptions = {}): LockProvider {
  return new CoreLockProvider(backend, options);
}

class CoreLockProvider implements LockProvider {
  readonly owner: string;
  private readonly timers = new TimerHeap();
  private readonly handles = new Set<HeldLock>();
  private readonly closing = new AbortController();
  private readonly pollIntervalMs: number;
  private readonly closeTimeoutMs: number;
  private readonly ttlPolicy: TtlPolicy;
  private readonly caller: BackendCaller;
  /** Undo work of calls the caller stopped waiting for (a grant that landed late); close() waits for it. */
  private readonly cleanups = new Set<Promise<unknown>>();
  /** What every lock handle of this provider shares: built once, not per grant. */
  private readonly lockContext: HeldLockContext;
  private closed: Promise<void> | undefined;
  private readonly logger: Logger | undefined;

  constructor(
    private readonly backendImpl: LockBackend,
    options: ProviderOptions,
  ) {
    this.owner = options.owner ?? defaultOwnerId();
    this.logger = options.logger;
    // Every waiting acquire listens to this signal; thousands of waiters are normal, not a leak.
    setMaxListeners(0, this.closing.signal);
    this.pollIntervalMs = positiveMs(options.pollIntervalMs, 'pollIntervalMs', DEFAULT_POLL_INTERVAL_MS);
    this.ttlPolicy = ttlPolicyOption(options.ttlBelowMinimum);
    this.closeTimeoutMs = positiveMs(options.closeTimeoutMs, 'closeTimeoutMs', DEFAULT_CLOSE_TIMEOUT_MS);
    this.caller = new BackendCaller(backendImpl, positiveMs(options.callTimeoutMs, 'callTimeoutMs', DEFAULT_CALL_TIMEOUT_MS));
    if (options.logger !== undefined && typeof options.logger?.warn !== 'function') {
      throw new InvalidArgumentError('logger', 'expected an object with a warn(fields, message) method');
    }
    this.lockContext = {
      caller: this.caller,
      timers: this.timers,
      ttlPolicy: this.ttlPolicy,
      logger: options.logger,
      forget: (lock) => this.handles.delete(lock),
      letGo: (grant, ttlMs) => this.letGo(grant, ttlMs),
    };
  }

  get backend(): string {
    return this.backendImpl.name;
  }

  get capabilities(): Capabilities {
    return this.backendImpl.capabilities;
  }

  tryAcquire(key: string, options?: AcquireOptions): Promise<Lock | null> {
    return this.tryTake(key, options, undefined);
  }

  acquire(key: string, options?: AcquireOptions): Promise<Lock> {
    return this.take(key, options, undefined);
  }

  semaphore(key: string, limit: number): Semaphore {
    this.assertOpen();
    validateKey(key);
    validateLimit(limit);
    const backend = this.backendImpl;
    if (!backend.tryGrantSlot || !backend.slotHolders) {
      throw new UnsupportedError(this.backend, 'semaphores', 'this adapter implements no tryGrantSlot (see docs/semaphores.md)');
    }
    return {
      key,
      limit,
      tryAcquire: (options) => this.tryTake(key, options, limit),
      acquire: (options) => this.take(key, options, limit),
      holders: async () => {
        this.assertOpen();
        return this.caller.run('holders', (call) => backend.slotHolders!(key, call));
      },
    };
  }

  /** One attempt at the key (limit undefined) or at one of its semaphore slots. */
  private async tryTake(key: string, options: AcquireOptions | undefined, limit: number | undefined): Promise<Lock | null> {
    this.assertOpen();
    validateKey(key);
    const validated = validateAcquireOptions(options, this.capabilities, this.ttlPolicy);
    if (validated.signal?.aborted) throw new LockAbortedError(key, validated.signal.reason);
    const attempt = this.newAttempt(key, validated, limit);
    publish(CHANNELS.acquire, () => ({ backend: this.backend, owner: this.owner, key, waitMs: 0 }));
    let grant: BackendGrant | null;
    try {
      grant = await this.attemptGrant(attempt, validated.signal, undefined);
    } catch (error) {
      if (validated.signal?.aborted) throw new LockAbortedError(key, validated.signal.reason);
      throw error;
    }
    return grant ? this.adopt(attempt, grant) : null;
  }

  private async take(key: string, options: AcquireOptions | undefined, limit: number | undefined): Promise<Lock> {
    this.assertOpen();
    validateKey(key);
    const validated = validateAcquireOptions(options, this.capabilities, this.ttlPolicy);
    if (validated.signal?.aborted) throw new LockAbortedError(key, validated.signal.reason);
    const { controller, dispose } = linkedController(validated.signal, this.closing.signal);
    try {
      const attempt = this.newAttempt(key, validated, limit);
      publish(CHANNELS.acquire, () => ({ backend: this.backend, owner: this.owner, key, waitMs: validated.waitMs }));
      const grant = await this.waitForGrant(attempt, validated.waitMs, controller.signal);
      return await this.adopt(attempt, grant);
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
    return this.caller.run('inspect', (call) => this.backendImpl.inspect(key, call));
  }

  held(): readonly LockInfo[] {
    return [...this.handles].map((lock) => lock.info()).sort(byKey);
  }

  async list(options?: ListOptions): Promise<readonly LockInfo[]> {
    this.assertOpen();
    const prefix = validateListOptions(options);
    return this.caller.run('list', (call) => this.backendImpl.list(prefix, call));
  }

  elect(key: string, work: LeaderWork, options: ElectOptions = {}): Election {
    this.assertOpen();
    const report = options?.onError ?? ((error: Error) => this.logger?.warn({ backend: this.backend, owner: this.owner, key, error }, `holdfast: election for "${key}": ${error.message}`));
    return new CampaigningElection(this, key, work, options, report);
  }

  observe(key: string, options: ObserveOptions = {}): AsyncIterableIterator<LockInfo | null> {
    this.assertOpen();
    validateKey(key);
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object');
    if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new InvalidArgumentError('signal', 'expected an AbortSignal');
    return observeHolder({
      key,
      signal: options.signal,
      closing: this.closing.signal,
      inspect: (signal) => this.caller.run('inspect', (call) => this.backendImpl.inspect(key, call), { signal }),
      waitForRelease: this.backendImpl.waitForChange
        ? (signal, timeoutMs) => this.backendImpl.waitForChange!(key, NOTHING_YET, { signal, timeoutMs })
        : undefined,
      pollIntervalMs: this.pollIntervalMs,
    });
  }

  async forceRelease(key: string): Promise<boolean> {
    this.assertOpen();
    validateKey(key);
    return this.caller.run('forceRelease', (call) => this.backendImpl.forceRelease(key, call));
  }

  close(): Promise<void> {
    this.closed ??= this.shutdown();
    return this.closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * Bounded by closeTimeoutMs whatever the server does: locks whose release is not confirmed in
   * time are reported lost through their signals, and the adapter is told to drop its connections.
   */
  private async shutdown(): Promise<void> {
    this.closing.abort(new ProviderClosedError(this.backend));
    const deadline = Date.now() + this.closeTimeoutMs;
    await Promise.allSettled([...this.handles].map((lock) => lock.releaseBefore(deadline)));
    await settledBefore([...this.cleanups], deadline);
    this.timers.stop();
    await this.caller
      .run('close', (call) => this.backendImpl.close(call), { deadline: Math.max(deadline, Date.now() + MIN_CLOSE_SLICE_MS) })
      .catch(() => undefined);
  }

  /**
   * One grant attempt under the caller's bounds; a grant that lands after the caller gave up is
   * released. A busy answer is kept on the attempt for the wait that follows.
   */
  private async attemptGrant(attempt: Attempt, signal: AbortSignal | undefined, deadline: number | undefined): Promise<BackendGrant | null> {
    attempt.sentAt = Date.now();
    const outcome = await this.caller.run('acquire', (call) => this.grantOnce(attempt.request, call), {
      signal,
      deadline,
      onAbandoned: (late) => this.abandon(attempt, late),
    });
    if (!outcome.granted) {
      attempt.busy = outcome;
      return null;
    }
    const grant = outcome.grant;
    if (Date.now() >= safetyDeadline(leaseStartOf(attempt, grant), attempt.request.ttlMs)) {
      // The process or the network stalled between request and reply for longer than the lease:
      // the lock may already be someone else's. Never hand it out; a waiting acquire tries again.
      this.inBackground(this.releaseQuietly(grant));
      attempt.request = { ...attempt.request, lockId: newLockId() };
      throw new BackendError(this.backend, 'acquire: the grant arrived after its lease had run out (a stalled process or network); it was released');
    }
    return grant;
  }

  /**
   * Gives up a grant attempt: its grant, if it lands, is released once the call settles. The next
   * attempt gets a new lockId, so that this late release (owner-checked by lockId) can never free it.
   */
  private abandon(attempt: Attempt, late: Promise<unknown>): void {
    const request = attempt.request;
    // Undone whether the late call succeeded or failed: a write can land although its reply was lost.
    this.inBackground(
      late
        .catch(() => undefined)
        .then(() => this.caller.run('release', (call) => this.backendImpl.abandon(request, call)))
        .catch(() => undefined),
    );
    attempt.request = { ...attempt.request, lockId: newLockId() };
  }

  /** Releases a grant no handle owns; a failure is no one's to report. */
  private releaseQuietly(grant: BackendGrant): Promise<unknown> {
    return this.caller.run('release', (call) => grant.release(call)).catch(() => undefined);
  }

  /** Clean-up work nobody awaits; close() waits for it, within its bound. */
  private inBackground(work: Promise<unknown>): void {
    const tracked = work.finally(() => this.cleanups.delete(tracked));
    this.cleanups.add(tracked);
  }

  /**
   * A grant declared lost keeps holding the key on the server if the server simply did not answer
   * (or a session/heartbeat keeps it alive): waiters would block until it expires. Release it
   * (owner-checked, so never anyone else's) as soon as the server answers, for up to two leases.
   */
  private letGo(grant: BackendGrant, ttlMs: number): void {
    const giveUpAt = Date.now() + 2 * Math.max(ttlMs, MIN_LET_GO_WINDOW_MS);
    this.inBackground(
      (async () => {
        for (let delayMs = 100; !this.closing.signal.aborted && Date.now() < giveUpAt; delayMs = Math.min(2 * delayMs, 2000)) {
          try {
            await this.caller.run('release', (call) => grant.release(call));
            return;
          } catch {
            await pause(delayMs, this.closing.signal, false);
          }
        }
      })(),
    );
  }

  private async waitForGrant(attempt: Attempt, waitMs: number, signal: AbortSignal): Promise<BackendGrant> {
    const deadline = Date.now() + waitMs;
    const backend = this.backendImpl;
    if (backend.acquireQueued && !isSlotRequest(attempt.request)) {
      // Hand-off to the first waiter keeps a released key from ever looking free, so trying first
      // cannot jump the queue; it tells a waiter apart from an immediate grant.
      const immediate = await this.attemptGrant(attempt, signal, undefined);
      if (immediate) return this.unlessAborted(attempt, immediate, signal);
      if (waitMs === 0) throw new LockTimeoutError(attempt.request.key, waitMs);
      publish(CHANNELS.wait, () => ({ backend: this.backend, owner: this.owner, key: attempt.request.key }));
      attempt.sentAt = Date.now();
      attempt.queued = true;
      const grant = await backend.acquireQueued(attempt.request, { signal, deadline }).catch((error: unknown) => {
        throw toBackendError(this.backend, 'acquire', error);
      });
      if (grant) return this.unlessAborted(attempt, grant, signal);
      throw new LockTimeoutError(attempt.request.key, waitMs);
    }
    const retry = new BackendRetry();
    let sawBusy = false;
    let waited = false;
    for (;;) {
      let grant: BackendGrant | null = null;
      try {
        // waitMs 0 is one attempt: it is bounded by the per-call timeout only.
        grant = await this.attemptGrant(attempt, signal, waitMs === 0 ? undefined : deadline);
        retry.succeeded();
        sawBusy = true;
      } catch (error) {
        if (signal.aborted || !isTransient(error)) throw error;
        // An attempt cut by the deadline after the backend had answered "busy" is a timeout, not a failure.
        if (sawBusy && Date.now() >= deadline) throw new LockTimeoutError(attempt.request.key, waitMs);
        retry.failed(error);
      }
      if (grant) return this.unlessAborted(attempt, grant, signal);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw retry.lastError ?? new LockTimeoutError(attempt.request.key, waitMs);
      if (retry.lastError) {
        await sleep(Math.min(remaining, retry.nextDelayMs(this.pollIntervalMs)), signal);
        continue;
      }
      const slice = Math.min(remaining, MAX_WAIT_SLICE_MS);
      if (!waited) {
        waited = true;
        publish(CHANNELS.wait, () => ({ backend: this.backend, owner: this.owner, key: attempt.request.key }));
      }
      if (backend.waitForChange) {
        await this.caller
          .run('wait', () => backend.waitForChange!(attempt.request.key, attempt.busy, { signal, timeoutMs: slice }), {
            signal,
            deadline: Date.now() + slice + WAIT_OVERRUN_MS,
          })
          // A failed wait is no answer about the key: poll once more after the usual interval.
          .catch(() => (signal.aborted ? undefined : sleep(Math.min(slice, this.pollIntervalMs), signal)));
      } else {
        await sleep(Math.min(slice, this.pollIntervalMs), signal);
      }
      if (signal.aborted) throw new LockAbortedError(attempt.request.key, signal.reason);
      // An attempt with no time left could only be cut short and leave a late grant to undo.
      if (Date.now() >= deadline) throw retry.lastError ?? new LockTimeoutError(attempt.request.key, waitMs);
    }
  }

  /** A grant that arrives after the caller gave up is released at once: nothing is left behind. */
  private async unlessAborted(attempt: Attempt, grant: BackendGrant, signal: AbortSignal): Promise<BackendGrant> {
    if (!signal.aborted) return grant;
    await this.releaseQuietly(grant);
    throw new LockAbortedError(attempt.request.key, signal.reason);
  }

  /** The backend's one attempt: at the key, or at a semaphore slot of it. */
  private grantOnce(request: GrantRequest, call: CallContext): Promise<GrantOutcome> {
    return isSlotRequest(request) ? this.backendImpl.tryGrantSlot!(request, call) : this.backendImpl.tryGrant(request, call);
  }

  private newAttempt(key: string, validated: ValidatedAcquire, limit: number | undefined): Attempt {
    const attempt: Attempt = {
      handle: undefined,
      queued: false,
      startedAt: Date.now(),
      sentAt: Date.now(),
      pendingLoss: undefined,
      busy: NOTHING_YET,
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
        ...(limit === undefined ? {} : { limit }),
      },
    };
    return attempt;
  }

  private async adopt(attempt: Attempt, grant: BackendGrant): Promise<Lock> {
    if (this.closed) {
      await this.releaseQuietly(grant);
      throw new ProviderClosedError(this.backend);
    }
    const handle = new HeldLock(this.lockContext, attempt.request, grant, leaseStartOf(attempt, grant));
    this.handles.add(handle);
    attempt.handle = handle;
    publish(CHANNELS.grant, () => ({
      backend: this.backend,
      owner: this.owner,
      key: handle.key,
      token: handle.token,
      waitedMs: Date.now() - attempt.startedAt,
      expiresAt: handle.expiresAt,
    }));
    if (attempt.pendingLoss) handle.markLost(attempt.pendingLoss.detail, attempt.pendingLoss.cause);
    return handle;
  }

  private assertOpen(): void {
    if (this.closed) throw new ProviderClosedError(this.backend);
  }
}

interface Attempt {
  handle: HeldLock | undefined;
  /** Granted through the backend's own queue (acquireQueued) rather than one request. */
  queued: boolean;
  readonly startedAt: number;
  sentAt: number;
  pendingLoss: { detail: string; cause: unknown } | undefined;
  /** The last busy answer, handed to the wait that follows it. */
  busy: Busy;
  /** Replaced (new lockId) after an abandoned attempt; see abandon(). */
  request: GrantRequest;
}

/**
 * The lease is timed on the local clock from the moment the request was sent: the server granted
 * no earlier than that, so the holder's idea of the lease can only end before the server's does.
 * A server timestamp is never trusted for this (clocks differ). A queued grant (an in-process FIFO
 * hand-off, same clock) starts when it was handed off.
 */
function leaseStartOf(attempt: Attempt, grant: BackendGrant): number {
  if (!attempt.queued) return attempt.sentAt;
  return Math.max(attempt.sentAt, Math.min(Date.now(), grant.acquiredAt.getTime()));
}

const NOTHING_YET: Busy = busy();

function isSlotRequest(request: GrantRequest): request is SlotRequest {
  return (request as SlotRequest).limit !== undefined;
}

function byKey(a: LockInfo, b: LockInfo): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** Backend failures are worth retrying while a caller still waits; bad input and conflicts are not. */
function isTransient(error: unknown): boolean {
  return error instanceof HoldfastError && error.code === ErrorCode.Backend;
}

/** Remembers the last backend failure of a waiting acquire and spaces out the retries. */
class BackendRetry {
  lastError: unknown;
  private failures = 0;

  succeeded(): void {
    this.lastError = undefined;
    this.failures = 0;
  }

  failed(error: unknown): void {
    this.lastError = error;
    this.failures++;
  }

  nextDelayMs(baseMs: number): number {
    return Math.min(MAX_RETRY_DELAY_MS, baseMs * 2 ** Math.min(this.failures - 1, 4));
  }
}

function ttlPolicyOption(value: unknown): TtlPolicy {
  if (value === undefined) return 'raise';
  if (value === 'raise' || value === 'reject') return value;
  throw new InvalidArgumentError('ttlBelowMinimum', `expected "raise" or "reject", got ${JSON.stringify(value)}`);
}

function positiveMs(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidArgumentError(name, `expected a positive number of ms, got ${String(value)}`);
  }
  return value;
}

/** Waits for the promises to settle, but not beyond `deadline`. */
async function settledBefore(promises: Promise<unknown>[], deadline: number): Promise<void> {
  if (promises.length === 0) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))));
  await Promise.race([Promise.allSettled(promises), timeUp]);
  clearTimeout(timer);
}
