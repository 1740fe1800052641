import { randomBytes } from 'node:crypto';
import type { QueuePlace } from '@holdfast/core/backend';
import { WAKE_CHANNEL_PREFIX } from './scripts.js';
import { SentCommands } from './sent-commands.js';
import { QUEUE_ENTRY_TTL_MS } from './single-node-grant.js';

/**
 * How often a queued waiter refreshes its place (and tries again), at most: a quarter of its
 * entry's life, so a live waiter does not lapse, and a dead one at the head delays the next by at
 * most its entry's life plus one refresh: min(2 s, TTL / 2) + min(0.5 s, a quarter of that).
 */
export const QUEUE_REFRESH_MS = 500;
/** The shortest life of a queue entry (for leases of less than twice this). */
const MIN_ENTRY_TTL_MS = 100;
/** Margin after a holder's lease before the next in line tries, so the key has certainly expired on the server. */
const EXPIRY_MARGIN_MS = 5;

/** One waiting acquire of this provider in a key's server-side queue: its place's local side. */
export class QueuedWaiter {
  /** Its last attempt found it next in line. */
  atHead = false;
  /** The place's attempts on the server: leaving the queue goes out after them (SentCommands says why). */
  readonly sent = new SentCommands();
  /** A dead waiter must not hold up the next one longer than a dead holder would (its lease). */
  private readonly entryTtlMs: number;
  private readonly refreshMs: number;
  private woken = false;
  private wake: (() => void) | undefined;

  constructor(
    readonly key: string,
    readonly waiterId: string,
    private readonly until: number,
    ttlMs: number,
  ) {
    this.entryTtlMs = Math.min(QUEUE_ENTRY_TTL_MS, Math.max(MIN_ENTRY_TTL_MS, ttlMs / 2));
    this.refreshMs = Math.min(QUEUE_REFRESH_MS, this.entryTtlMs / 4);
  }

  /** How long the entry lasts from an attempt sent now: no longer than the caller waits. */
  entryLifeMs(): number {
    return Math.min(this.entryTtlMs, this.until - Date.now());
  }

  /**
   * Until the next attempt: a refresh of the place; the next in line also at the poll interval (in
   * case the message naming it was missed) and when the holder's lease runs out (expiries publish
   * nothing). Only the next in line can be granted: the others' attempts just keep their place, and
   * cost the server one script per waiter per period whatever the grant rate.
   */
  nextTryInMs(freeInMs: number, pollIntervalMs: number): number {
    if (!this.atHead) return this.refreshMs;
    return Math.min(this.refreshMs, pollIntervalMs, freeInMs + EXPIRY_MARGIN_MS);
  }

  /** Before each attempt: a wake-up from now on (even one during the attempt) ends the wait that follows. */
  armed(): void {
    this.woken = false;
  }

  /** Resolves when woken (since `armed`), after `ms`, or when `signal` aborts. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.woken || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }

  woke(): void {
    this.woken = true;
    this.wake?.();
  }
}

/**
 * This provider's waiters in server-side queues (single node, plain locks), found by the release
 * messages of the provider's one subscription: a message naming a waiter wakes that waiter only.
 */
export class QueuedWaiters {
  /** Where release scripts name this provider's waiters: a random id, part of each of its waiter ids. */
  private readonly wakeId = randomBytes(12).toString('base64url');
  readonly wakeChannel = WAKE_CHANNEL_PREFIX + this.wakeId;
  private readonly byId = new Map<string, QueuedWaiter>();
  private readonly byKey = new Map<string, Set<QueuedWaiter>>();
  private idle: { readonly promise: Promise<void>; readonly resolve: () => void } | undefined;

  /** The place's waiter, added at its first attempt: its id names this provider (TELL_NEXT in scripts.ts). */
  joined(key: string, place: QueuePlace, ttlMs: number): QueuedWaiter {
    const waiterId = this.idOf(place);
    const known = this.byId.get(waiterId);
    if (known) return known;
    const waiter = new QueuedWaiter(key, waiterId, place.until, ttlMs);
    this.byId.set(waiterId, waiter);
    let waiters = this.byKey.get(key);
    if (!waiters) this.byKey.set(key, (waiters = new Set()));
    waiters.add(waiter);
    return waiter;
  }

  /** The place's waiter, if one of its attempts queued it and it has not left since. */
  of(place: QueuePlace): QueuedWaiter | undefined {
    return this.byId.get(this.idOf(place));
  }

  remove(waiter: QueuedWaiter): void {
    this.byId.delete(waiter.waiterId);
    const waiters = this.byKey.get(waiter.key);
    waiters?.delete(waiter);
    if (waiters?.size === 0) this.byKey.delete(waiter.key);
    if (this.idle && this.byId.size === 0) {
      this.idle.resolve();
      this.idle = undefined;
    }
  }

  /**
   * Resolves once every waiter is gone, each having been granted or having left the queue on the
   * server (a waiter is removed once its removal is answered): close() then quits behind them.
   */
  drained(): Promise<void> {
    if (this.byId.size === 0) return Promise.resolve();
    if (!this.idle) {
      let resolve!: () => void;
      const promise = new Promise<void>((done) => (resolve = done));
      this.idle = { promise, resolve };
    }
    return this.idle.promise;
  }

  /** A release named the next waiter: wake it if it is ours (another provider's otherwise). */
  named(waiterId: string): void {
    this.byId.get(waiterId)?.woke();
  }

  /**
   * The key was freed without naming a waiter (a release by an older version or by redlock, a
   * forced release, an expiry notification): the local waiter that was last seen next tries.
   */
  freed(key: string): void {
    const waiters = this.byKey.get(key);
    if (waiters) for (const waiter of waiters) if (waiter.atHead) waiter.woke();
  }

  /** The subscription (re)started or dropped: messages may have been missed, and the server may have forgotten the queues. */
  wakeEveryone(): void {
    for (const waiter of this.byId.values()) waiter.woke();
  }

  private idOf(place: QueuePlace): string {
    return `${this.wakeId}/${place.id}`;
  }
}
