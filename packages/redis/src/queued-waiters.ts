import { randomBytes } from 'node:crypto';
import { WAKE_CHANNEL_PREFIX } from './scripts.js';

/** One waiter of this provider in a key's server-side queue. */
export class QueuedWaiter {
  /** Its last attempt found it next in line. */
  atHead = false;
  private woken = false;
  private wake: (() => void) | undefined;

  constructor(
    readonly key: string,
    readonly waiterId: string,
  ) {}

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

  /** A waiter for one queued acquire: its id names this provider (TELL_NEXT in scripts.ts). */
  waiterFor(key: string, lockId: string): QueuedWaiter {
    return new QueuedWaiter(key, `${this.wakeId}/${lockId}`);
  }

  add(waiter: QueuedWaiter): void {
    this.byId.set(waiter.waiterId, waiter);
    let waiters = this.byKey.get(waiter.key);
    if (!waiters) this.byKey.set(waiter.key, (waiters = new Set()));
    waiters.add(waiter);
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
   * Resolves once every waiter's wait is over, each having sent the removal of its entry (a waiter
   * removes itself after sending it): close() then quits behind those removals on the same connection.
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
}
