import { setMaxListeners } from 'node:events';
import type { Capabilities, LockInfo } from '@holdfast/core';
import {
  type Busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  type LockBackend,
  type ModeRequest,
  type QueuePlace,
  type SlotRequest,
  sleep,
  type WaitOptions,
} from '@holdfast/core/backend';
import { DEFAULT_LOCK_DELAY_MS, MAX_SESSION_TTL_MS, MIN_SESSION_TTL_MS, SESSION_TTL_MULTIPLIER } from './constants.js';
import { ConsulHttp } from './consul-http.js';
import type { GrantContext } from './grant.js';
import { inspectKey, type LockSpace, listLocks, modeHolders, slotHolders } from './inspection.js';
import { type ConsulWake, tryGrant } from './lock.js';
import type { ResolvedOptions } from './options.js';
import { readWritePlace, tryGrantMode } from './read-write.js';
import { forceRelease, releaseAttempt } from './release.js';
import { tryGrantSlot } from './semaphore.js';
import { abandonSlot, forceReleaseSlots, semaphorePlace } from './semaphore-record.js';
import { Sessions } from './sessions.js';
import { WaitQueue } from './wait-queue.js';
import { Watches } from './watches.js';

/**
 * Session TTL = max(10 s, ttl/2), invalidated 2 x TTL after the last renewal: at most ttl + 10 s (the
 * 10 s minimum), then the lock-delay keeps the key from new holders.
 */
function expiryGraceMs(lockDelayMs: number): number {
  return MIN_SESSION_TTL_MS * SESSION_TTL_MULTIPLIER - MIN_SESSION_TTL_MS + lockDelayMs;
}

/** What a Consul provider offers; `expiryGraceMs` shown for Consul's default lock-delay (it follows `lockDelayMs`). */
export const CONSUL_CAPABILITIES: Capabilities = Object.freeze({
  minTtlMs: MIN_SESSION_TTL_MS,
  maxTtlMs: MAX_SESSION_TTL_MS,
  // Maps to a 15 s session TTL, the Go client's default.
  defaultTtlMs: 30_000,
  fencing: 'strict',
  fifo: false,
  wakeUp: 'blocking-query',
  crossProcess: true,
  expiryGraceMs: expiryGraceMs(DEFAULT_LOCK_DELAY_MS),
  renewal: 'backend',
});

/** The wiring: one HTTP client, the sessions and the watches, shared by every grant of the provider. */
export class ConsulBackend implements LockBackend<ConsulWake> {
  readonly name = 'consul';
  readonly capabilities: Capabilities;
  private readonly http: ConsulHttp;
  private readonly sessions: Sessions;
  private readonly watches: Watches;
  private readonly grants: GrantContext;
  private readonly queue: WaitQueue;
  private readonly space: LockSpace;
  /** Aborted when close() runs out of time: every background call stops at once. */
  private readonly stopping = new AbortController();
  /** Queue entries being deleted: close() lets them finish before it destroys the session they are on. */
  private readonly cleanups = new Set<Promise<void>>();
  /** Aborted as close() begins: clean-ups that retry stop retrying. */
  private readonly closing = new AbortController();

  constructor(private readonly options: ResolvedOptions) {
    // Every background clean-up listens to it: thousands after a mass loss are normal.
    setMaxListeners(0, this.stopping.signal);
    const { address, token, datacenter, callTimeoutMs } = options;
    this.http = new ConsulHttp({ baseUrl: address, token, datacenter, requestTimeoutMs: callTimeoutMs });
    const background = (): AbortSignal => AbortSignal.any([this.stopping.signal, AbortSignal.timeout(callTimeoutMs)]);
    this.sessions = new Sessions(this.http, options, background);
    this.watches = new Watches(this.http, options.prefix, { retries: options.monitorRetries, retryMs: options.monitorRetryMs });
    const track = (cleanup: Promise<void>): void => {
      this.cleanups.add(cleanup);
      void cleanup.finally(() => this.cleanups.delete(cleanup));
    };
    const closing = this.closing.signal;
    this.grants = { http: this.http, sessions: this.sessions, watches: this.watches, background, track, closing };
    this.queue = new WaitQueue(this.grants, options);
    this.space = { http: this.http, prefix: options.prefix };
    this.capabilities = Object.freeze({ ...CONSUL_CAPABILITIES, expiryGraceMs: expiryGraceMs(options.lockDelayMs) });
  }

  /** A waiting acquire's attempts (with a place) go through Holdfast's queue of the key (wait-queue.ts). */
  tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<ConsulWake>> {
    if (request.place) return this.queue.attempt(request, request.place, call);
    return tryGrant(this.grants, this.options, request, call);
  }

  /** A semaphore slot: Consul's own semaphore protocol (semaphore.ts), so `consul lock -n N` shares the slots. */
  tryGrantSlot(request: SlotRequest, call: CallContext): Promise<GrantOutcome<ConsulWake>> {
    return tryGrantSlot(this.grants, this.options, request, call);
  }

  slotHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return slotHolders(this.space, key, call.signal);
  }

  /** A reader's or the writer's grant: the semaphore's protocol with each holder's mode in the record (read-write.ts). */
  tryGrantMode(request: ModeRequest, call: CallContext): Promise<GrantOutcome<ConsulWake>> {
    return tryGrantMode(this.grants, this.options, request, call);
  }

  modeHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return modeHolders(this.space, key, call.signal);
  }

  /** Behind the head of the key's queue, the queue's wait; otherwise (the head, semaphores, observers) the key's. */
  async waitForChange(key: string, busy: Busy<ConsulWake>, options: WaitOptions): Promise<void> {
    const waiter = this.queue.behindHead(options.place);
    if (waiter) return this.queue.untilHead(waiter, options);
    const { index, lockDelayUntil, slots } = busy.wake ?? { index: 0n };
    if (lockDelayUntil === undefined) {
      const watchKey = slots ? semaphorePlace(this.options.prefix, key).dir : this.consulKey(key);
      return this.watches.waitUntilFree(watchKey, index, options);
    }
    // A lock-delay changes nothing Consul could report: wait it out, like the Go client.
    await sleep(Math.min(Math.max(0, lockDelayUntil - Date.now()), options.timeoutMs), options.signal).catch(() => undefined);
  }

  /** Its turn passes on and its entry is deleted in the background (close() lets the delete finish). */
  async leaveQueue(_key: string, place: QueuePlace): Promise<void> {
    this.queue.leave(place);
  }

  abandon(request: GrantRequest | SlotRequest | ModeRequest, call: CallContext): Promise<void> {
    if ('mode' in request) return abandonSlot(this.http, readWritePlace(this.options.prefix, request.key), request.lockId, call.signal);
    if ('limit' in request) return abandonSlot(this.http, semaphorePlace(this.options.prefix, request.key), request.lockId, call.signal);
    return releaseAttempt(this.http, this.consulKey(request.key), request.lockId, call.signal);
  }

  inspect(key: string, call: CallContext): Promise<LockInfo | null> {
    return inspectKey(this.space, key, () => this.sessions.probe(this.capabilities.defaultTtlMs, call.signal), call.signal);
  }

  list(prefix: string, call: CallContext): Promise<readonly LockInfo[]> {
    return listLocks(this.space, prefix, call.signal);
  }

  /** The key's lock, or else every slot of its semaphore, or else every grant of its read-write lock (a key is one of them). */
  async forceRelease(key: string, call: CallContext): Promise<boolean> {
    if (await forceRelease(this.http, key, this.consulKey(key), call.signal)) return true;
    if (await forceReleaseSlots(this.http, semaphorePlace(this.options.prefix, key), call.signal)) return true;
    return forceReleaseSlots(this.http, readWritePlace(this.options.prefix, key), call.signal);
  }

  /**
   * Core released every handle and let go of lost grants before this. The shared sessions are
   * destroyed within `call.signal`; when it aborts, every socket is destroyed at once.
   */
  async close(call: CallContext): Promise<void> {
    const hardStop = (): void => {
      this.stopping.abort(call.signal.reason);
      this.http.close();
    };
    if (call.signal.aborted) hardStop();
    else call.signal.addEventListener('abort', hardStop, { once: true });
    this.closing.abort();
    try {
      this.watches.close();
      await Promise.allSettled([...this.cleanups]);
      await this.sessions.close(call.signal);
    } finally {
      call.signal.removeEventListener('abort', hardStop);
      this.stopping.abort();
      this.http.close();
    }
  }

  private consulKey(key: string): string {
    return `${this.options.prefix}/${key}`;
  }
}
