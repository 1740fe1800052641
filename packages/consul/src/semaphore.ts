import {
  BackendError,
  InvalidArgumentError,
  LockAbortedError,
  LockConflictError,
  LockLostError,
  LockReleasedError,
  LockTimeoutError,
  ProviderClosedError,
} from '@holdfast/core';
import { linkedController, sleep, toBackendError } from '@holdfast/core/backend';
import {
  BLOCKING_WAIT_MS,
  DEFAULT_MONITOR_RETRIES,
  DEFAULT_MONITOR_RETRY_MS,
  SEMAPHORE_FLAG,
  SEMAPHORE_LOCK_KEY,
  SEMAPHORE_SESSION_NAME,
} from './constants.js';
import { ConsulHttp, ConsulHttpError } from './consul-http.js';
import { deleteKey, type KvEntry, readEntries, readKey, writeKey } from './kv.js';
import { checkAgentUrl } from './options.js';
import { createSession, RenewedSession } from './sessions.js';

/** Bound of one session call (create, renew, destroy) of a slot. */
const SEMAPHORE_CALL_TIMEOUT_MS = 10_000;

/**
 * A counting semaphore with Consul's own protocol (`api/semaphore.go`, `consul lock -n N`): up to
 * `limit` holders at once. Core has no semaphore interface yet, so this is this package's own API.
 */
export interface ConsulSemaphoreOptions {
  /** The agent's HTTP address, e.g. http://127.0.0.1:8500. */
  readonly url: string;
  readonly token?: string;
  readonly datacenter?: string;
  /** The semaphore's Consul key prefix, as given to `consul lock -n N <prefix>`. */
  readonly prefix: string;
  readonly limit: number;
  /** Session TTL of each slot (Go default 15 s, Consul's minimum 10 s). */
  readonly sessionTtlMs?: number;
  /** Value of our contender entry (opaque to Consul). */
  readonly value?: string;
  readonly monitorRetries?: number;
  readonly monitorRetryMs?: number;
}

export interface SemaphoreSlot {
  /** The slot's session: its id is our name in the coordination key's Holders. */
  readonly session: string;
  /** Aborted with a LockLostError when the slot is lost, a LockReleasedError on release. */
  readonly signal: AbortSignal;
  release(): Promise<void>;
}

interface Coordination {
  Limit: number;
  Holders: Record<string, boolean>;
}

export class ConsulSemaphore {
  private readonly http: ConsulHttp;
  readonly prefix: string;
  private readonly lockKey: string;
  private readonly slots = new Set<Slot>();
  private readonly closing = new AbortController();

  constructor(private readonly options: ConsulSemaphoreOptions) {
    if ('address' in options) throw new InvalidArgumentError('address', 'address was renamed url');
    checkAgentUrl(options.url);
    if (!Number.isInteger(options.limit) || options.limit < 1)
      throw new InvalidArgumentError('limit', `expected a whole number >= 1, got ${options.limit}`);
    this.prefix = options.prefix.replace(/^\/+|\/+$/g, '');
    if (!this.prefix) throw new InvalidArgumentError('prefix', 'must not be empty');
    this.lockKey = `${this.prefix}/${SEMAPHORE_LOCK_KEY}`;
    this.http = new ConsulHttp({ baseUrl: options.url, token: options.token, datacenter: options.datacenter });
  }

  get limit(): number {
    return this.options.limit;
  }

  /** One attempt: a slot, or null when `limit` holders already hold one. */
  async tryAcquire(): Promise<SemaphoreSlot | null> {
    return this.acquireSlot(Date.now(), undefined);
  }

  /** Waits up to `waitMs` (default forever) for a slot; LockTimeoutError / LockAbortedError otherwise. */
  async acquire(options: { waitMs?: number; signal?: AbortSignal } = {}): Promise<SemaphoreSlot> {
    const waitMs = options.waitMs ?? Infinity;
    const slot = await this.acquireSlot(Date.now() + waitMs, options.signal);
    if (!slot) throw new LockTimeoutError(this.prefix, waitMs);
    return slot;
  }

  /** Releases every slot taken through this instance. */
  async close(): Promise<void> {
    this.closing.abort(new ProviderClosedError('consul'));
    await Promise.allSettled([...this.slots].map((slot) => slot.release()));
    this.http.close();
  }

  private async acquireSlot(deadline: number, signal: AbortSignal | undefined): Promise<Slot | null> {
    if (this.closing.signal.aborted) throw new ProviderClosedError('consul');
    if (signal?.aborted) throw new LockAbortedError(this.prefix, signal.reason);
    const ttlMs = this.options.sessionTtlMs ?? 15_000;
    let session: RenewedSession | undefined;
    let slot: Slot | undefined;
    const { controller, dispose } = linkedController(signal, this.closing.signal);
    try {
      const createdAt = Date.now();
      const bound = AbortSignal.any([controller.signal, AbortSignal.timeout(SEMAPHORE_CALL_TIMEOUT_MS)]);
      const id = await createSession(this.http, { ttlMs, name: SEMAPHORE_SESSION_NAME, behavior: 'delete' }, bound);
      session = new RenewedSession(this.http, id, ttlMs, createdAt, SEMAPHORE_CALL_TIMEOUT_MS, (detail, cause) =>
        slot?.lose(detail, cause),
      );
      await this.enterContender(id);
      if (!(await this.claim(id, deadline, controller.signal))) {
        await session.stop({ destroy: true });
        return null;
      }
      slot = new Slot(this, session);
      this.slots.add(slot);
      slot.startMonitor();
      return slot;
    } catch (error) {
      // A session with behaviour "delete" takes our contender entry with it.
      await session?.stop({ destroy: true });
      if (signal?.aborted) throw new LockAbortedError(this.prefix, signal.reason);
      if (this.closing.signal.aborted) throw new ProviderClosedError('consul');
      throw toBackendError('consul', 'semaphore acquire', error);
    } finally {
      dispose();
    }
  }

  private async enterContender(session: string): Promise<void> {
    const entered = await writeKey(this.http, `${this.prefix}/${session}`, this.options.value ?? '', {
      acquire: session,
      flags: SEMAPHORE_FLAG,
    });
    if (!entered) throw new BackendError('consul', `semaphore acquire: Consul refused the contender entry ${this.prefix}/${session}`);
  }

  /** The Go client's Acquire loop: prune dead holders, block while full, add ourselves by CAS. */
  private async claim(session: string, deadline: number, signal: AbortSignal): Promise<boolean> {
    let index = 0n;
    for (;;) {
      const waitMs = Math.min(BLOCKING_WAIT_MS, Math.max(deadline - Date.now(), 1));
      const { entries, index: next } = await readEntries(this.http, `${this.prefix}/`, {
        recurse: true,
        consistent: true,
        index,
        waitMs,
        signal,
      });
      const lockEntry = entries.find((entry) => entry.Key === this.lockKey) ?? null;
      const state = this.decode(lockEntry);
      const alive = new Set(entries.filter((entry) => entry.Session).map((entry) => entry.Session));
      for (const holder of Object.keys(state.Holders)) if (!alive.has(holder)) delete state.Holders[holder];
      if (Object.keys(state.Holders).length >= state.Limit) {
        if (Date.now() >= deadline) return false;
        index = next;
        continue;
      }
      state.Holders[session] = true;
      const conditions = { cas: lockEntry?.ModifyIndex ?? 0, flags: SEMAPHORE_FLAG };
      if (await writeKey(this.http, this.lockKey, JSON.stringify(state), conditions)) return true;
      index = 0n;
    }
  }

  decode(entry: KvEntry | null): Coordination {
    if (!entry) return { Limit: this.options.limit, Holders: {} };
    if (entry.Flags !== SEMAPHORE_FLAG)
      throw new LockConflictError(this.lockKey, `existing key does not match semaphore use (flags ${entry.Flags})`);
    const text = entry.Value === null ? '' : Buffer.from(entry.Value, 'base64').toString('utf8');
    let state: Coordination;
    try {
      state = JSON.parse(text) as Coordination;
    } catch {
      throw new LockConflictError(this.lockKey, 'the coordination key is not a semaphore');
    }
    if (state.Limit !== this.options.limit)
      throw new LockConflictError(this.lockKey, `semaphore limit conflict (lock: ${state.Limit}, local: ${this.options.limit})`);
    state.Holders ??= {};
    return state;
  }

  /** Monitor: lost once our session is no longer among the holders (or the key is gone). */
  async monitor(slot: Slot, signal: AbortSignal): Promise<void> {
    let index = 0n;
    let retries = this.options.monitorRetries ?? DEFAULT_MONITOR_RETRIES;
    while (!signal.aborted) {
      try {
        const { entries, index: next } = await readEntries(this.http, `${this.prefix}/`, {
          recurse: true,
          consistent: true,
          index,
          signal,
        });
        index = next < index ? 0n : next;
        const lockEntry = entries.find((entry) => entry.Key === this.lockKey);
        if (!lockEntry || !this.decode(lockEntry).Holders[slot.session]) return slot.lose('no longer among the semaphore holders');
      } catch (error) {
        if (signal.aborted) return;
        if (retries > 0 && (!(error instanceof ConsulHttpError) || error.retryable)) {
          retries--;
          index = 0n;
          await sleep(this.options.monitorRetryMs ?? DEFAULT_MONITOR_RETRY_MS, signal).catch(() => undefined);
          continue;
        }
        return slot.lose('the semaphore monitor failed', error);
      }
    }
  }

  /** The Go client's Release: remove ourselves from Holders by CAS (retrying), delete our contender entry. */
  async leave(slot: Slot): Promise<void> {
    this.slots.delete(slot);
    for (;;) {
      const { entry } = await readKey(this.http, this.lockKey);
      if (!entry) break;
      const state = this.decode(entry);
      if (!state.Holders[slot.session]) break;
      delete state.Holders[slot.session];
      if (await writeKey(this.http, this.lockKey, JSON.stringify(state), { cas: entry.ModifyIndex, flags: SEMAPHORE_FLAG })) break;
    }
    await deleteKey(this.http, `${this.prefix}/${slot.session}`);
  }
}

class Slot implements SemaphoreSlot {
  private readonly controller = new AbortController();
  private readonly monitorStop = new AbortController();
  private state: 'held' | 'lost' | 'released' = 'held';

  constructor(
    private readonly semaphore: ConsulSemaphore,
    private readonly renewed: RenewedSession,
  ) {}

  get session(): string {
    return this.renewed.id;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  startMonitor(): void {
    void this.semaphore.monitor(this, this.monitorStop.signal);
  }

  lose(detail: string, cause?: unknown): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    this.monitorStop.abort();
    this.controller.abort(new LockLostError(this.semaphore.prefix, detail, cause));
  }

  async release(): Promise<void> {
    if (this.state === 'released') return;
    const wasHeld = this.state === 'held';
    this.state = 'released';
    this.monitorStop.abort();
    try {
      await this.semaphore.leave(this);
    } catch (error) {
      throw toBackendError('consul', 'semaphore release', error);
    } finally {
      await this.renewed.stop({ destroy: true });
      if (wasHeld) this.controller.abort(new LockReleasedError(this.semaphore.prefix));
    }
  }
}
