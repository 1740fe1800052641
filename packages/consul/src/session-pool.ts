import { ProviderClosedError } from '@holdfast/core';
import { sleep, untilAborted } from '@holdfast/core/backend';
import type { ConsulHttp } from './consul-http.js';
import { createSession, destroySession, RenewedSession } from './session.js';
import type { GrantSession } from './sessions.js';

const DROP_RETRY_FIRST_MS = 50;
const DROP_RETRY_MAX_MS = 1000;

/** One live shared session: its renewal, who uses it, and whether it still takes new users. */
interface Shared {
  readonly renewed: RenewedSession;
  readonly users: Set<SharedUse>;
  retired: boolean;
}

/**
 * The provider's shared sessions: one renewed session per session TTL (normally exactly one), used by
 * every auto-renewed lock, so holding N locks costs one renew per TTL/2, not N.
 *
 * A session can be retired: it takes no new users, and is destroyed (no longer renewed) once its last
 * user leaves. An acquire whose answer never came retires its session, so that a lock write that
 * lands late is not kept alive by the renewals of a session everyone else still uses.
 */
export class SharedSessions {
  /** The session new users get, per session TTL; `id` is set once the create succeeded. */
  private readonly byTtl = new Map<number, { promise: Promise<RenewedSession>; id?: string }>();
  private readonly live = new Map<string, Shared>();
  /** Dropped sessions whose destroy is still being retried: close() gives each one last try. */
  private readonly dropping = new Map<string, Promise<void>>();
  private closed = false;
  /** Aborts session creates still in flight when the pool closes. */
  private readonly closing = new AbortController();

  constructor(
    private readonly http: ConsulHttp,
    private readonly lockDelayMs: number,
    private readonly callTimeoutMs: number,
    private readonly sessionName?: string,
  ) {}

  /**
   * The live shared session for this session TTL, created on first use. The creation is shared by
   * concurrent callers and bounded by the call timeout; each caller stops waiting when its signal aborts.
   */
  get(sessionTtlMs: number, signal: AbortSignal): Promise<RenewedSession> {
    if (this.closed) return Promise.reject(new ProviderClosedError('consul'));
    let current = this.byTtl.get(sessionTtlMs);
    if (!current) {
      const slot: { promise: Promise<RenewedSession>; id?: string } = { promise: this.create(sessionTtlMs) };
      this.byTtl.set(sessionTtlMs, (current = slot));
      slot.promise.then(
        (session) => (slot.id = session.id),
        // A failed create must not be cached: the next acquire tries again.
        () => this.byTtl.get(sessionTtlMs) === slot && this.byTtl.delete(sessionTtlMs),
      );
    }
    return untilAborted(current.promise, signal);
  }

  /** A new user of the live shared session for this session TTL. */
  async use(sessionTtlMs: number, signal: AbortSignal): Promise<GrantSession> {
    const session = await this.get(sessionTtlMs, signal);
    const user = new SharedUse(this, session.id, sessionTtlMs);
    // Counted from the attempt on: a retired session is not destroyed under a lock write on its way.
    this.live.get(session.id)?.users.add(user);
    return user;
  }

  /** Forget a session Consul says is gone, so the next acquire creates a fresh one. */
  discard(id: string): void {
    this.unlist(id);
    void this.live.get(id)?.renewed.stop({ destroy: false });
    this.live.delete(id);
  }

  /** No new users for this session; destroyed once the last one leaves. */
  retire(id: string): void {
    const shared = this.live.get(id);
    if (!shared) return;
    this.unlist(id);
    shared.retired = true;
    this.destroyIfUnused(id);
  }

  /** The user gave the session back: a retired session goes with its last user. */
  leave(user: SharedUse): void {
    this.live.get(user.id)?.users.delete(user);
    this.destroyIfUnused(user.id);
  }

  /**
   * Gone at once, whoever still uses it: no new users, no renewal from now on, and destroyed, retried
   * with a backoff until Consul confirms, the pool closes, or 2 x TTL passed (Consul has invalidated
   * the unrenewed session by then anyway). Its users are not told: only queue entries use it this way.
   */
  drop(id: string): void {
    const shared = this.live.get(id);
    if (!shared || this.closed) return;
    this.unlist(id);
    this.live.delete(id);
    const done = this.destroyUntilConfirmed(shared.renewed).finally(() => this.dropping.delete(id));
    this.dropping.set(id, done);
  }

  /** Destroys every session (each destroy bounded by `signal`). */
  async close(signal: AbortSignal): Promise<void> {
    this.closed = true;
    this.closing.abort();
    await Promise.allSettled([...this.byTtl.values()].map((slot) => slot.promise));
    this.byTtl.clear();
    const sessions = [...this.live.values()].map((shared) => shared.renewed);
    this.live.clear();
    const dropped = [...this.dropping.keys()];
    await Promise.all([
      ...sessions.map((session) => session.stop({ destroy: true, signal })),
      ...dropped.map((id) => destroySession(this.http, id, signal).catch(() => undefined)),
      ...this.dropping.values(),
    ]);
  }

  private async destroyUntilConfirmed(session: RenewedSession): Promise<void> {
    await session.stop({ destroy: false });
    for (let failures = 0; !this.closing.signal.aborted && Date.now() < session.lapsedBy; failures++) {
      const bound = AbortSignal.any([this.closing.signal, AbortSignal.timeout(this.callTimeoutMs)]);
      try {
        await destroySession(this.http, session.id, bound);
        return;
      } catch {
        const delayMs = Math.min(DROP_RETRY_MAX_MS, DROP_RETRY_FIRST_MS * 2 ** Math.min(failures, 5));
        await sleep(delayMs, this.closing.signal).catch(() => undefined);
      }
    }
  }

  private unlist(id: string): void {
    for (const [ttl, slot] of this.byTtl) if (slot.id === id) this.byTtl.delete(ttl);
  }

  private destroyIfUnused(id: string): void {
    const shared = this.live.get(id);
    if (!shared?.retired || shared.users.size > 0) return;
    this.live.delete(id);
    void shared.renewed.stop({ destroy: true });
  }

  private create(sessionTtlMs: number): Promise<RenewedSession> {
    return (async () => {
      const createdAt = Date.now();
      const id = await createSession(
        this.http,
        { ttlMs: sessionTtlMs, lockDelayMs: this.lockDelayMs, name: this.sessionName },
        AbortSignal.any([this.closing.signal, AbortSignal.timeout(this.callTimeoutMs)]),
      );
      const renewed = new RenewedSession(this.http, id, sessionTtlMs, createdAt, this.callTimeoutMs, this.lockDelayMs, (detail, cause) => {
        const users = this.live.get(id)?.users ?? [];
        this.discard(id);
        void destroySession(this.http, id, AbortSignal.timeout(this.callTimeoutMs)).catch(() => undefined);
        for (const user of users) user.onExpired?.(detail, cause);
      });
      if (this.closed) {
        void renewed.stop({ destroy: true });
        throw new ProviderClosedError('consul');
      }
      this.live.set(id, { renewed, users: new Set(), retired: false });
      return renewed;
    })();
  }
}

/** One user of the provider's shared session; the attempt's user becomes its grant's. */
class SharedUse implements GrantSession {
  onExpired: GrantSession['onExpired'];

  constructor(
    private readonly pool: SharedSessions,
    readonly id: string,
    readonly ttlMs: number,
  ) {}

  stopRenewing(): void {}

  async leave(): Promise<void> {
    this.pool.leave(this);
  }

  /** New acquires get a new session; this one is destroyed (no longer renewed) once its last user leaves. */
  disown(): void {
    this.pool.retire(this.id);
    this.pool.leave(this);
  }

  discard(): void {
    this.pool.discard(this.id);
  }
}
