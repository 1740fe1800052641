import type { Grant, GrantRequest } from '@holdfast/core/backend';
import { TimerHeap } from '@holdfast/core/backend';
import type { LockInfo } from '@holdfast/core';

interface Entry {
  readonly request: GrantRequest;
  readonly acquiredAt: Date;
  expiresAt: number;
  readonly token: bigint;
  readonly expiry: { run: () => void };
}

interface Waiter {
  readonly request: GrantRequest;
  readonly resolve: (grant: Grant | null) => void;
  readonly reject: (reason: unknown) => void;
  readonly timeout: { run: () => void };
  readonly detach: () => void;
}

/**
 * The shared state of in-memory locks. Several providers may use one store, each standing for a
 * process. Expiries share one timer and waiters' deadlines another; waiters queue per key in FIFO order and
 * receive the lock directly from the releasing holder, so nobody polls.
 */
export class MemoryStore {
  private readonly entries = new Map<string, Entry>();
  private readonly tokens = new Map<string, bigint>();
  private readonly queues = new Map<string, Waiter[]>();
  private readonly timers = new TimerHeap();
  /** Waiters' deadlines keep the process alive: someone is awaiting the outcome. */
  private readonly deadlines = new TimerHeap(true);

  tryGrant(request: GrantRequest): Grant | null {
    this.expireIfDue(request.key);
    if (this.entries.has(request.key)) return null;
    return this.grant(request);
  }

  acquireQueued(request: GrantRequest, wait: { signal: AbortSignal; deadline: number }): Promise<Grant | null> {
    const immediate = (this.queues.get(request.key)?.length ?? 0) === 0 ? this.tryGrant(request) : null;
    if (immediate) return Promise.resolve(immediate);
    if (wait.deadline <= Date.now()) return Promise.resolve(null);
    if (wait.signal.aborted) return Promise.reject(wait.signal.reason);
    return new Promise((resolve, reject) => {
      const queue = this.queueOf(request.key);
      const leave = (): void => {
        const index = queue.indexOf(waiter);
        if (index >= 0) queue.splice(index, 1);
        if (queue.length === 0) this.queues.delete(request.key);
        this.deadlines.cancel(waiter.timeout);
        wait.signal.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        leave();
        reject(wait.signal.reason);
      };
      const waiter: Waiter = {
        request,
        resolve,
        reject,
        timeout: {
          run: () => {
            leave();
            resolve(null);
          },
        },
        detach: leave,
      };
      queue.push(waiter);
      wait.signal.addEventListener('abort', onAbort, { once: true });
      if (Number.isFinite(wait.deadline)) this.deadlines.schedule(waiter.timeout, wait.deadline);
    });
  }

  extend(key: string, lockId: string, ttlMs: number): Date | undefined {
    const entry = this.heldBy(key, lockId);
    if (!entry) return undefined;
    entry.expiresAt = Date.now() + ttlMs;
    this.timers.schedule(entry.expiry, entry.expiresAt);
    return new Date(entry.expiresAt);
  }

  release(key: string, lockId: string): boolean {
    const entry = this.heldBy(key, lockId);
    if (!entry) return false;
    this.remove(key, entry);
    return true;
  }

  isHeld(key: string, lockId: string): boolean {
    return this.heldBy(key, lockId) !== undefined;
  }

  forceRelease(key: string): boolean {
    this.expireIfDue(key);
    const entry = this.entries.get(key);
    if (!entry) return false;
    this.remove(key, entry);
    entry.request.onLost('force-released by an administrator');
    return true;
  }

  inspect(key: string): LockInfo | null {
    this.expireIfDue(key);
    const entry = this.entries.get(key);
    if (!entry) return null;
    return {
      key,
      owner: entry.request.owner,
      reason: entry.request.reason,
      acquiredAt: entry.acquiredAt,
      expiresAt: new Date(entry.expiresAt),
      token: entry.token,
      details: { waiters: this.queues.get(key)?.length ?? 0 },
    };
  }

  private grant(request: GrantRequest): Grant {
    const token = (this.tokens.get(request.key) ?? 0n) + 1n;
    this.tokens.set(request.key, token);
    const acquiredAt = new Date();
    const entry: Entry = {
      request,
      acquiredAt,
      expiresAt: acquiredAt.getTime() + request.ttlMs,
      token,
      expiry: { run: () => this.expireIfDue(request.key) },
    };
    this.entries.set(request.key, entry);
    this.timers.schedule(entry.expiry, entry.expiresAt);
    return { token, acquiredAt, expiresAt: new Date(entry.expiresAt) };
  }

  private heldBy(key: string, lockId: string): Entry | undefined {
    this.expireIfDue(key);
    const entry = this.entries.get(key);
    return entry?.request.lockId === lockId ? entry : undefined;
  }

  private expireIfDue(key: string): void {
    const entry = this.entries.get(key);
    if (!entry || entry.expiresAt > Date.now()) return;
    this.remove(key, entry);
    entry.request.onLost('its TTL ran out before it was renewed');
  }

  /** Frees the key and hands it to the longest-waiting contender, if any. */
  private remove(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.timers.cancel(entry.expiry);
    const waiter = this.queues.get(key)?.[0];
    if (!waiter) return;
    waiter.detach();
    waiter.resolve(this.grant(waiter.request));
  }

  private queueOf(key: string): Waiter[] {
    let queue = this.queues.get(key);
    if (!queue) {
      queue = [];
      this.queues.set(key, queue);
    }
    return queue;
  }
}
