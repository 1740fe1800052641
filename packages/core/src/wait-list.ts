import { MAX_TIMER_MS } from './timer-range.js';

interface Waiter<Value, Payload> {
  readonly payload: Payload;
  readonly resolve: (value: Value | undefined) => void;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export interface WaitListOptions {
  readonly signal: AbortSignal;
  /** Upper bound in ms; Infinity (or anything past setTimeout's range) waits until woken or aborted. */
  readonly timeoutMs: number;
}

/**
 * Callers waiting per key for something to happen, in arrival order: the one wait primitive every
 * adapter shares (release messages, blocking queries, change streams, FIFO hand-off). A wait
 * resolves with the value it was woken with, or undefined on timeout or abort; it never rejects
 * and leaves no timer or listener behind. `Payload` is what a waiter carries for its waker (the
 * request a FIFO hand-off grants).
 */
export class WaitList<Key = string, Value = void, Payload = undefined> {
  private readonly byKey = new Map<Key, Set<Waiter<Value, Payload>>>();
  private count = 0;

  wait(key: Key, options: WaitListOptions, payload?: Payload): Promise<Value | undefined> {
    const { signal, timeoutMs } = options;
    if (signal.aborted || timeoutMs <= 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const waiter: Waiter<Value, Payload> = {
        payload: payload as Payload,
        resolve,
        signal,
        onAbort: () => this.settle(key, waiter, undefined),
        timer: undefined,
      };
      if (timeoutMs <= MAX_TIMER_MS) waiter.timer = setTimeout(waiter.onAbort, timeoutMs);
      signal.addEventListener('abort', waiter.onAbort, { once: true });
      let waiters = this.byKey.get(key);
      if (!waiters) this.byKey.set(key, (waiters = new Set()));
      waiters.add(waiter);
      this.count++;
    });
  }

  /** Wakes the longest-waiting caller on `key` with the value `deliver` makes from its payload. */
  wakeFirst(key: Key, deliver: (payload: Payload) => Value): boolean {
    const first = this.byKey.get(key)?.values().next().value;
    if (!first) return false;
    this.settle(key, first, deliver(first.payload));
    return true;
  }

  /** Wakes every caller waiting on `key`; returns how many there were. */
  wakeAll(key: Key, value: Value): number {
    const waiters = this.byKey.get(key);
    if (!waiters) return 0;
    const woken = waiters.size;
    for (const waiter of [...waiters]) this.settle(key, waiter, value);
    return woken;
  }

  /** Wakes every caller on every key (a reconnect: anything may have changed). */
  wakeEveryone(value: Value): number {
    let woken = 0;
    for (const key of [...this.byKey.keys()]) woken += this.wakeAll(key, value);
    return woken;
  }

  /** Whether anyone waits on `key`. */
  has(key: Key): boolean {
    return this.byKey.has(key);
  }

  /** How many wait on `key`, or on all keys together. */
  size(key?: Key): number {
    return key === undefined ? this.count : (this.byKey.get(key)?.size ?? 0);
  }

  keys(): IterableIterator<Key> {
    return this.byKey.keys();
  }

  private settle(key: Key, waiter: Waiter<Value, Payload>, value: Value | undefined): void {
    const waiters = this.byKey.get(key);
    if (!waiters?.delete(waiter)) return;
    if (waiters.size === 0) this.byKey.delete(key);
    this.count--;
    if (waiter.timer !== undefined) clearTimeout(waiter.timer);
    waiter.signal.removeEventListener('abort', waiter.onAbort);
    waiter.resolve(value);
  }
}
