import { setMaxListeners } from 'node:events';
import { NOTHING_YET } from './attempt.js';
import type { LockBackend } from './backend.js';
import { BackendCaller, DEFAULT_CALL_TIMEOUT_MS } from './backend-caller.js';
import { BackgroundWork } from './background-work.js';
import { ANSWER_CHECKS, checkBackend } from './contract-check.js';
import type { Logger } from './diagnostics.js';
import { CampaigningElection, type LeaderWork } from './election.js';
import { InvalidArgumentError, ProviderClosedError, UnsupportedError } from './errors.js';
import { GrantTaker } from './grant-taker.js';
import { providerCapabilities } from './hand-off.js';
import type { HeldLock, HeldLockContext } from './held-lock.js';
import { defaultOwnerId } from './identity.js';
import type { LockProof } from './lock-proof.js';
import { LockTaker } from './lock-taker.js';
import { MultiKeyTaker } from './multi-key-taker.js';
import { observeHolder } from './observe.js';
import { OutageReport } from './outage-report.js';
import {
  DEFAULT_CLOSE_TIMEOUT_MS,
  DEFAULT_POLL_INTERVAL_MS,
  type ProviderOptions,
  positiveMs,
  ttlPolicyOption,
} from './provider-options.js';
import { readWriteLock } from './read-write.js';
import { resumeLock } from './resume.js';
import { TimerHeap } from './timer-heap.js';
import type {
  AcquireOptions,
  Capabilities,
  Election,
  ElectOptions,
  ListOptions,
  Lock,
  LockInfo,
  LockProvider,
  MultiLock,
  ObserveOptions,
  ReadWriteLock,
  Semaphore,
} from './types.js';
import { type TtlPolicy, validateKey, validateLimit, validateListOptions } from './validation.js';

export { DEFAULT_CLOSE_TIMEOUT_MS, type ProviderOptions, providerOptions } from './provider-options.js';

/** The loss detail a same-provider forceRelease gives its holders' signals. */
const FORCED_RELEASE = 'force-released by an administrator (forceRelease through its own provider)';

/** Even a close() that spent its budget on releases gives the adapter this long to drop its connections. */
const MIN_CLOSE_SLICE_MS = 50;

/** Builds the user-facing LockProvider from an adapter's primitives. Adapters call this once. */
export function createProvider(backend: LockBackend, options: ProviderOptions = {}): LockProvider {
  checkBackend(backend);
  return new CoreLockProvider(backend, options);
}

class CoreLockProvider implements LockProvider {
  readonly owner: string;
  /** Renewal timers, armed on the next tick: a lock released as soon as it was granted never sets one. */
  private readonly timers = new TimerHeap(true);
  private readonly handles = new Set<HeldLock>();
  private readonly closing = new AbortController();
  private readonly pollIntervalMs: number;
  private readonly closeTimeoutMs: number;
  private readonly ttlPolicy: TtlPolicy;
  private readonly caller: BackendCaller;
  private readonly background: BackgroundWork;
  private readonly locks: LockTaker;
  private readonly multi = new MultiKeyTaker(this);
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
    this.caller = new BackendCaller(
      backendImpl,
      positiveMs(options.callTimeoutMs, 'callTimeoutMs', DEFAULT_CALL_TIMEOUT_MS),
      this.owner,
      this.closing.signal,
    );
    this.background = new BackgroundWork(backendImpl, this.caller, this.closing.signal);
    if (options.logger !== undefined && typeof options.logger?.warn !== 'function') {
      throw new InvalidArgumentError('logger', 'expected an object with a warn(fields, message) method');
    }
    // What every lock handle of this provider shares: built once, not per grant.
    this.lockContext = {
      caller: this.caller,
      timers: this.timers,
      ttlPolicy: this.ttlPolicy,
      logger: options.logger,
      forget: (lock) => this.handles.delete(lock),
      letGo: (grant, ttlMs) => this.background.letGo(grant, ttlMs),
    };
    this.locks = new LockTaker({
      backend: backendImpl,
      owner: this.owner,
      ttlPolicy: this.ttlPolicy,
      grants: new GrantTaker(
        backendImpl,
        this.caller,
        this.background,
        this.owner,
        this.pollIntervalMs,
        new OutageReport(backendImpl.name, this.owner, options.logger),
      ),
      background: this.background,
      closing: this.closing.signal,
      lockContext: this.lockContext,
      handles: this.handles,
      isClosed: () => this.closed !== undefined,
      assertOpen: () => this.assertOpen(),
    });
  }

  get backend(): string {
    return this.backendImpl.name;
  }

  get capabilities(): Capabilities {
    return providerCapabilities(this.backendImpl);
  }

  tryAcquire(key: string, options?: AcquireOptions): Promise<Lock | null> {
    return this.locks.tryTake(key, options, undefined);
  }

  acquire(key: string, options?: AcquireOptions): Promise<Lock> {
    return this.locks.take(key, options, undefined);
  }

  tryAcquireAll(keys: readonly string[], options?: AcquireOptions): Promise<MultiLock | null> {
    return this.multi.tryTakeAll(keys, options);
  }

  acquireAll(keys: readonly string[], options?: AcquireOptions): Promise<MultiLock> {
    return this.multi.takeAll(keys, options);
  }

  semaphore(key: string, limit: number): Semaphore {
    this.assertOpen();
    validateKey(key);
    validateLimit(limit);
    const backend = this.backendImpl;
    // A backend learns some limits on its first connection (MongoDB: mongod has no semaphores), so the capability is read each time.
    if (!backend.tryGrantSlot || !backend.slotHolders || this.capabilities.noSemaphores !== undefined) {
      const why = this.capabilities.noSemaphores ?? 'this adapter implements no tryGrantSlot';
      throw new UnsupportedError(this.backend, 'semaphores', `${why} (see docs/semaphores.md)`);
    }
    return {
      key,
      limit,
      tryAcquire: (options) => this.locks.tryTake(key, options, limit),
      acquire: (options) => this.locks.take(key, options, limit),
      holders: async () => {
        this.assertOpen();
        return this.caller.run('holders', (call) => backend.slotHolders!(key, call), { check: ANSWER_CHECKS.slotHolders });
      },
    };
  }

  readWrite(key: string): ReadWriteLock {
    this.assertOpen();
    validateKey(key);
    return readWriteLock(key, this.backendImpl, this.locks, this.caller, () => this.assertOpen());
  }

  async inspect(key: string): Promise<LockInfo | null> {
    this.assertOpen();
    validateKey(key);
    return this.caller.run('inspect', (call) => this.backendImpl.inspect(key, call), { check: ANSWER_CHECKS.inspect });
  }

  held(): readonly LockInfo[] {
    return [...this.handles].map((lock) => lock.info()).sort(byKey);
  }

  async list(options?: ListOptions): Promise<readonly LockInfo[]> {
    this.assertOpen();
    const prefix = validateListOptions(options);
    return this.caller.run('list', (call) => this.backendImpl.list(prefix, call), { check: ANSWER_CHECKS.list });
  }

  elect(key: string, work: LeaderWork, options: ElectOptions = {}): Election {
    this.assertOpen();
    const report =
      options?.onError ??
      ((error: Error) =>
        this.logger?.warn({ backend: this.backend, owner: this.owner, key, error }, `holdfast: election for "${key}": ${error.message}`));
    return new CampaigningElection(this, key, work, options, report);
  }

  observe(key: string, options: ObserveOptions = {}): AsyncIterableIterator<LockInfo | null> {
    this.assertOpen();
    validateKey(key);
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object');
    if (options.signal !== undefined && !(options.signal instanceof AbortSignal))
      throw new InvalidArgumentError('signal', 'expected an AbortSignal');
    return observeHolder({
      key,
      signal: options.signal,
      closing: this.closing.signal,
      inspect: (signal) =>
        this.caller.run('inspect', (call) => this.backendImpl.inspect(key, call), { signal, check: ANSWER_CHECKS.inspect }),
      waitForRelease: this.backendImpl.waitForChange
        ? (signal, timeoutMs) => this.backendImpl.waitForChange!(key, NOTHING_YET, { signal, timeoutMs })
        : undefined,
      pollIntervalMs: this.pollIntervalMs,
    });
  }

  resume(proof: LockProof | string): Promise<Lock> {
    this.assertOpen();
    return resumeLock(
      {
        backend: this.backendImpl,
        ttlPolicy: this.ttlPolicy,
        lockContext: this.lockContext,
        adopt: (handle) => {
          // close() began while the resume was on its way: the lock goes back, as a late grant does.
          if (this.closed) {
            void handle.release().catch(() => undefined);
            throw new ProviderClosedError(this.backend);
          }
          this.handles.add(handle);
        },
      },
      proof,
    );
  }

  async forceRelease(key: string): Promise<boolean> {
    this.assertOpen();
    validateKey(key);
    // This provider's own holders of the key (a lock, or every slot of a semaphore) are told before the
    // backend frees it, so none of them still works when another holder can be granted the key.
    // Their own owner-checked release is not sent (it could free the record first and make forceRelease
    // answer false); only a forceRelease that failed leaves their records to be freed in the background.
    const own = [...this.handles].filter((handle) => handle.key === key);
    for (const handle of own) handle.markLost(FORCED_RELEASE, undefined, false, 'force-released');
    try {
      return await this.caller.run('forceRelease', (call) => this.backendImpl.forceRelease(key, call), {
        check: ANSWER_CHECKS.forceRelease,
      });
    } catch (error) {
      for (const handle of own) handle.letGo();
      throw error;
    }
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
    await this.background.settledBefore(deadline);
    this.timers.stop();
    await this.caller
      .run('close', (call) => this.backendImpl.close(call), { deadline: Math.max(deadline, Date.now() + MIN_CLOSE_SLICE_MS) })
      .catch(() => undefined);
    this.caller.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new ProviderClosedError(this.backend);
  }
}

function byKey(a: LockInfo, b: LockInfo): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
