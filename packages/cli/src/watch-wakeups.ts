import type { LockInfo, LockProvider } from '@holdfast/core';

/**
 * Each observer is a held key watched through `provider.observe()`: one release subscription (or a
 * change stream, a blocking query) per key. Beyond this many keys the view relies on its refresh
 * interval, so a watch over a large prefix cannot open hundreds of backend watches.
 */
export const MAX_OBSERVED_KEYS = 32;

/**
 * Wakes the watch loop when a listed key's holder changes, through the backend's notifications
 * (core's observe()). Backends that only poll get no observers: polling each key would cost more
 * than the one list() per refresh that already shows the change.
 */
export class HolderWakeUps {
  private readonly observers = new Map<string, AbortController>();
  /** The token each observed key had in the last list: what the view shows. */
  private readonly shown = new Map<string, bigint>();
  private readonly running = new Set<Promise<void>>();
  private changedSinceWait = false;
  private wake: (() => void) | undefined;

  constructor(private readonly provider: LockProvider) {}

  /** Whether the backend announces releases (otherwise follow() does nothing). */
  get enabled(): boolean {
    return this.provider.capabilities.wakeUp !== 'poll';
  }

  /** Observes these locks' keys (the first MAX_OBSERVED_KEYS of them) and stops observing the others. */
  follow(locks: readonly LockInfo[]): void {
    if (!this.enabled) return;
    this.shown.clear();
    for (const info of locks.slice(0, MAX_OBSERVED_KEYS)) this.shown.set(info.key, info.token);
    for (const [key, controller] of this.observers) {
      if (this.shown.has(key)) continue;
      controller.abort();
      this.observers.delete(key);
    }
    for (const key of this.shown.keys()) if (!this.observers.has(key)) this.start(key);
  }

  /** Resolves at the next holder change seen since the last call, or when `signal` aborts. */
  changed(signal: AbortSignal): Promise<void> {
    if (this.changedSinceWait || signal.aborted) {
      this.changedSinceWait = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        this.wake = undefined;
        this.changedSinceWait = false;
        resolve();
      };
      this.wake = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Ends every observer and waits until they have returned. */
  async stop(): Promise<void> {
    for (const controller of this.observers.values()) controller.abort();
    this.observers.clear();
    await Promise.allSettled([...this.running]);
  }

  private start(key: string): void {
    const controller = new AbortController();
    this.observers.set(key, controller);
    const run = this.observe(key, controller.signal).finally(() => {
      this.running.delete(run);
      // An observer that ended on a backend failure is started again by the next follow().
      if (this.observers.get(key) === controller) this.observers.delete(key);
    });
    this.running.add(run);
  }

  private async observe(key: string, signal: AbortSignal): Promise<void> {
    try {
      for await (const holder of this.provider.observe(key, { signal })) {
        // Compared with what the view shows, not with observe()'s previous answer: a release that
        // lands between the list and the observer's first look is a change too.
        if (holder?.token !== this.shown.get(key)) this.notify();
      }
    } catch {
      // The watch loop's own list() reports backend failures at its interval; waking it here would
      // turn an outage into a loop of failing lists and restarted observers.
    }
  }

  private notify(): void {
    this.changedSinceWait = true;
    this.wake?.();
  }
}
