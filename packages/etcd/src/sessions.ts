import type { EtcdRpc } from './rpc.js';
import { Session } from './session.js';

/** etcd counts lease TTLs in whole seconds; a lock's TTL is rounded up, never down. */
export function ttlSeconds(ttlMs: number): number {
  return Math.max(1, Math.ceil(ttlMs / 1000));
}

/**
 * The provider's sessions: one kept-alive lease per TTL in use (in practice one per provider, as
 * every lock of an app usually has the same TTL), shared by every lock and queue entry of that TTL,
 * so 10,000 held locks cost one keep-alive, not 10,000. A lost session is replaced on the next use.
 */
export class Sessions {
  private readonly byTtl = new Map<number, Promise<Session>>();
  private readonly oneOff = new Set<Session>();

  constructor(
    private readonly rpc: EtcdRpc,
    /** Bounds a LeaseGrant shared by several callers: none of them owns it. */
    private readonly background: () => AbortSignal,
  ) {}

  /** The live shared session for `ttlMs`, granted on first use or after a loss. */
  async shared(ttlMs: number, signal: AbortSignal): Promise<Session> {
    const seconds = ttlSeconds(ttlMs);
    for (;;) {
      const pending = this.byTtl.get(seconds);
      if (!pending) {
        const granting = Session.grant(this.rpc, seconds, true, this.background());
        this.byTtl.set(seconds, granting);
        // A failed grant is not cached: the next attempt asks again.
        granting.catch(() => {
          if (this.byTtl.get(seconds) === granting) this.byTtl.delete(seconds);
        });
        return raceAbort(granting, signal);
      }
      const current = await raceAbort(settled(pending), signal);
      // Another caller replaced it meanwhile: use theirs, so no second lease is kept alive for nothing.
      if (this.byTtl.get(seconds) !== pending) continue;
      if (current?.alive) return current;
      this.byTtl.delete(seconds);
      if (current) void current.close(this.background());
    }
  }

  /** A lease of its own that is not kept alive: a lock with `autoRenew: false` lapses with it. */
  async single(ttlMs: number, signal: AbortSignal): Promise<Session> {
    const session = await Session.grant(this.rpc, ttlSeconds(ttlMs), false, signal);
    this.oneOff.add(session);
    return session;
  }

  /** Revokes a one-off lease (its lock was released or moved to another lease). */
  async drop(session: Session, signal: AbortSignal): Promise<void> {
    if (!this.oneOff.delete(session)) return;
    await session.close(signal);
  }

  /** Revokes every lease: entries on them vanish at once instead of at TTL. */
  async close(signal: AbortSignal): Promise<void> {
    const shared = await Promise.all([...this.byTtl.values()].map(settled));
    this.byTtl.clear();
    const all = [...shared.filter((s): s is Session => s !== undefined), ...this.oneOff];
    this.oneOff.clear();
    await Promise.all(all.map((s) => s.close(signal)));
  }
}

function settled<T>(promise: Promise<T>): Promise<T | undefined> {
  return promise.then(
    (value) => value,
    () => undefined,
  );
}

/** `promise`, or the signal's reason as soon as it aborts (the promise goes on for others). */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
