import type { ZkSession } from './session.js';
import type { ZkCalls } from './zk-calls.js';

/** One registered watch, shared by everyone waiting on the same path for the same thing. */
interface Pending {
  readonly fired: Promise<void>;
  fire(): void;
}

/**
 * Waits for a znode to go (a predecessor, a holder) or for a key's children to change (semaphore
 * waiters), with one ZooKeeper watch per path however many wait on it: the client cannot remove a
 * watch, so a wait that times out leaves its watch for the next wait to share instead of adding one.
 */
export class Watches {
  private readonly gone = new Map<string, Pending>();
  private readonly children = new Map<string, Pending>();

  constructor(
    private readonly calls: ZkCalls,
    private readonly session: ZkSession,
  ) {}

  /** Until `path` no longer exists (at once if it is gone now), the session changes state, `signal` or `timeoutMs`. */
  async untilGone(path: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
    let pending = this.gone.get(path);
    if (!pending) {
      pending = this.pending(this.gone, path);
      const stat = await this.calls
        .exists(path, signal, () => pending!.fire())
        .catch((error: unknown) => {
          pending!.fire();
          throw error;
        });
      if (stat === null) pending.fire();
    }
    await this.bounded(pending.fired, signal, timeoutMs);
  }

  /** Until the children of `path` change, the session changes state, `signal` or `timeoutMs`. */
  async untilChildrenChange(path: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
    let pending = this.children.get(path);
    if (!pending) {
      pending = this.pending(this.children, path);
      const names = await this.calls
        .children(path, signal, () => pending!.fire())
        .catch((error: unknown) => {
          pending!.fire();
          throw error;
        });
      if (names === null) pending.fire();
    }
    await this.bounded(pending.fired, signal, timeoutMs);
  }

  /** Wakes every wait (close, a lost session: the next attempt reads afresh). */
  wakeAll(): void {
    for (const pending of [...this.gone.values(), ...this.children.values()]) pending.fire();
  }

  private pending(map: Map<string, Pending>, path: string): Pending {
    let fire!: () => void;
    const fired = new Promise<void>((resolve) => {
      fire = () => {
        if (map.get(path) === pending) map.delete(path);
        resolve();
      };
    });
    const pending: Pending = { fired, fire: () => fire() };
    map.set(path, pending);
    return pending;
  }

  private async bounded(fired: Promise<void>, signal: AbortSignal, timeoutMs: number): Promise<void> {
    const change = this.session.nextChange();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      await Promise.race([
        fired,
        change.promise,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
          onAbort = resolve;
          if (signal.aborted) resolve();
          else signal.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } finally {
      change.cancel();
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }
}
