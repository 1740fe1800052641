import { type ConsulHttp } from './consul-http.js';
import { MIN_SESSION_TTL_MS, SESSION_TTL_MULTIPLIER } from './constants.js';
import { createSession, destroySession, RenewedSession } from './sessions.js';

/**
 * Consul invalidates a session 2 x TTL after its last renewal, never sooner. A lease of `ttlMs`
 * therefore gets a session TTL of ttlMs / 2 (at least Consul's 10 s minimum): others can take the
 * key about `ttlMs` after the holder went silent (20 s for leases under 20 s), plus the lock-delay.
 */
export function sessionTtlFor(leaseMs: number): number {
  return Math.max(MIN_SESSION_TTL_MS, Math.ceil(leaseMs / SESSION_TTL_MULTIPLIER));
}

export interface SessionUser {
  readonly session: string;
  onSessionExpired(detail: string, cause?: unknown): void;
}

/**
 * The provider's shared sessions: one renewed session per session TTL (normally exactly one), used by
 * every auto-renewed lock, so holding N locks costs one renew per TTL/2, not N.
 */
export class SharedSessions {
  private readonly byTtl = new Map<number, Promise<RenewedSession>>();
  private readonly users = new Map<string, Set<SessionUser>>();
  private closed = false;

  constructor(
    private readonly http: ConsulHttp,
    private readonly lockDelayMs: number,
  ) {}

  /** The live shared session for this session TTL, created on first use. */
  get(sessionTtlMs: number): Promise<RenewedSession> {
    if (this.closed) return Promise.reject(new Error('the session pool is closed'));
    let session = this.byTtl.get(sessionTtlMs);
    if (!session) {
      session = this.create(sessionTtlMs);
      this.byTtl.set(sessionTtlMs, session);
      // A failed create must not be cached: the next acquire tries again.
      session.catch(() => this.byTtl.get(sessionTtlMs) === session && this.byTtl.delete(sessionTtlMs));
    }
    return session;
  }

  /** Forget a session Consul says is gone, so the next acquire creates a fresh one. */
  discard(id: string): void {
    for (const [ttl, promise] of this.byTtl) {
      void promise.then((session) => {
        if (session.id !== id || this.byTtl.get(ttl) !== promise) return;
        this.byTtl.delete(ttl);
        void session.stop({ destroy: false });
      }, () => undefined);
    }
  }

  attach(user: SessionUser): void {
    let set = this.users.get(user.session);
    if (!set) this.users.set(user.session, (set = new Set()));
    set.add(user);
  }

  detach(user: SessionUser): void {
    this.users.get(user.session)?.delete(user);
  }

  async close(): Promise<void> {
    this.closed = true;
    const sessions = await Promise.allSettled(this.byTtl.values());
    this.byTtl.clear();
    await Promise.all(sessions.map((s) => (s.status === 'fulfilled' ? s.value.stop({ destroy: true }) : undefined)));
  }

  private async create(sessionTtlMs: number): Promise<RenewedSession> {
    const createdAt = Date.now();
    const id = await createSession(this.http, { ttlMs: sessionTtlMs, lockDelayMs: this.lockDelayMs });
    return new RenewedSession(this.http, id, sessionTtlMs, createdAt, (detail, cause) => {
      this.discard(id);
      void destroySession(this.http, id).catch(() => undefined);
      const users = this.users.get(id);
      this.users.delete(id);
      for (const user of users ?? []) user.onSessionExpired(detail, cause);
    });
  }
}
