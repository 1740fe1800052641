import { ProviderClosedError } from '@holdfast/core';
import { sleep, untilAborted } from '@holdfast/core/backend';
import type { ConsulHttp } from './consul-http.js';
import { createSession, destroySession, RenewedSession } from './session.js';
import type { GrantSession } from './sessions.js';

const DROP_RETRY_FIRST_MS = 50;
const DROP_RETRY_MAX_MS = 1000;

/** A grant (or an attempt) on a shared session: told when the session is gone. */
export interface SessionUser {
  readonly id: string;
  onSessionExpired(detail: string, cause?: unknown): void;
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
  /** The session new users get, per session TTL; `session` is set once the create succeeded. */
  private readonly byTtl = new Map<number, { promise: Promise<RenewedSession>; session?: RenewedSession }>();
  private readonly live = new Map<string, RenewedSession>();
  private readonly users = new Map<string, Set<SessionUser>>();
  private readonly retired = new Set<string>();
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
      const slot: { promise: Promise<RenewedSession>; session?: RenewedSession } = { promise: this.create(sessionTtlMs) };
      this.byTtl.set(sessionTtlMs, (current = slot));
      slot.promise.then(
        (session) => (slot.session = session),
        // A failed create must not be cached: the next acquire tries again.
        () => this.byTtl.get(sessionTtlMs) === slot && this.byTtl.delete(sessionTtlMs),
      );
    }
    return untilAborted(current.promise, signal);
  }

  /** A new user of the live shared session for this session TTL. */
  async use(sessionTtlMs: number, signal: AbortSignal): Promise<GrantSession> {
    return new SharedUse(this, (await this.get(sessionTtlMs, signal)).id, sessionTtlMs);
  }

  /** Forget a session Consul says is gone, so the next acquire creates a fresh one. */
  discard(id: string): void {
    this.unlist(id);
    void this.live.get(id)?.stop({ destroy: false });
    this.live.delete(id);
    this.retired.delete(id);
  }

  /** No new users for this session; destroyed once the last one leaves. */
  retire(id: string): void {
    if (!this.live.has(id)) return;
    this.unlist(id);
    this.retired.add(id);
    this.destroyIfUnused(id);
  }

  /**
   * Gone at once, whoever still uses it: no new users, no renewal from now on, and destroyed, retried
   * with a backoff until Consul confirms, the pool closes, or 2 x TTL passed (Consul has invalidated
   * the unrenewed session by then anyway). Its users are not told: only queue entries use it this way.
   */
  drop(id: string): void {
    const session = this.live.get(id);
    if (!session || this.closed) return;
    this.unlist(id);
    this.live.delete(id);
    this.retired.delete(id);
    this.users.delete(id);
    const done = this.destroyUntilConfirmed(session).finally(() => this.dropping.delete(id));
    this.dropping.set(id, done);
  }

  attach(user: SessionUser): void {
    let set = this.users.get(user.id);
    if (!set) this.users.set(user.id, (set = new Set()));
    set.add(user);
  }

  detach(user: SessionUser): void {
    const set = this.users.get(user.id);
    set?.delete(user);
    if (set?.size === 0) this.users.delete(user.id);
    this.destroyIfUnused(user.id);
  }

  /** Destroys every session (each destroy bounded by `signal`). */
  async close(signal: AbortSignal): Promise<void> {
    this.closed = true;
    this.closing.abort();
    await Promise.allSettled([...this.byTtl.values()].map((slot) => slot.promise));
    this.byTtl.clear();
    const sessions = [...this.live.values()];
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
    for (const [ttl, slot] of this.byTtl) if (slot.session?.id === id) this.byTtl.delete(ttl);
  }

  private destroyIfUnused(id: string): void {
    if (!this.retired.has(id) || (this.users.get(id)?.size ?? 0) > 0) return;
    const session = this.live.get(id);
    this.retired.delete(id);
    this.live.delete(id);
    this.users.delete(id);
    void session?.stop({ destroy: true });
  }

  private create(sessionTtlMs: number): Promise<RenewedSession> {
    return (async () => {
      const createdAt = Date.now();
      const id = await createSession(
        this.http,
        { ttlMs: sessionTtlMs, lockDelayMs: this.lockDelayMs, name: this.sessionName },
        AbortSignal.any([this.closing.signal, AbortSignal.timeout(this.callTimeoutMs)]),
      );
      const session = new RenewedSession(this.http, id, sessionTtlMs, createdAt, this.callTimeoutMs, (detail, cause) => {
        this.discard(id);
        void destroySession(this.http, id, AbortSignal.timeout(this.callTimeoutMs)).catch(() => undefined);
        const users = this.users.get(id);
        this.users.delete(id);
        for (const user of users ?? []) user.onSessionExpired(detail, cause);
      });
      if (this.closed) {
        void session.stop({ destroy: true });
        throw new ProviderClosedError('consul');
      }
      this.live.set(id, session);
      return session;
    })();
  }
}

/** One user of the provider's shared session; the attempt's user becomes its grant's. */
class SharedUse implements GrantSession, SessionUser {
  onExpired: GrantSession['onExpired'];

  constructor(
    private readonly pool: SharedSessions,
    readonly id: string,
    readonly ttlMs: number,
  ) {
    // Counted from the attempt on: a retired session is not destroyed under a lock write on its way.
    pool.attach(this);
  }

  onSessionExpired(detail: string, cause?: unknown): void {
    this.onExpired?.(detail, cause);
  }

  stopRenewing(): void {}

  async leave(): Promise<void> {
    this.pool.detach(this);
  }

  /** New acquires get a new session; this one is destroyed (no longer renewed) once its last user leaves. */
  disown(): void {
    this.pool.retire(this.id);
    this.pool.detach(this);
  }

  discard(): void {
    this.pool.discard(this.id);
  }
}
