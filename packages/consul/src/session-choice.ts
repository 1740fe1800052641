import type { GrantRequest } from '@holdfast/core/backend';
import { LOCK_SESSION_NAME, QUEUE_SESSION_NAME, SEMAPHORE_SESSION_NAME } from './constants.js';
import type { ConsulHttp } from './consul-http.js';
import { createSession } from './session.js';
import { type GrantSession, LapsingSession, OwnRenewedSession, sessionTtlFor } from './session-kinds.js';
import { SharedSessions } from './session-pool.js';
import { SpareSessions } from './spare-sessions.js';

export interface SessionSettings {
  readonly sessionMode: 'shared' | 'per-lock';
  readonly lockDelayMs: number;
  readonly callTimeoutMs: number;
}

/** Chooses and makes the session of each attempt. */
export class SessionChoice {
  private readonly pool: SharedSessions;
  /** Queue entries' own shared sessions, apart from the locks', so that dropping one never touches a lock. */
  private readonly queuePool: SharedSessions;
  private readonly spares = new SpareSessions();

  constructor(
    private readonly http: ConsulHttp,
    private readonly settings: SessionSettings,
    /** The bound of a clean-up nobody waits for. */
    private readonly bound: () => AbortSignal,
  ) {
    this.pool = new SharedSessions(http, settings.lockDelayMs, settings.callTimeoutMs);
    // No lock-delay: entry names are never reused, and a dropped session must not hold anything up.
    this.queuePool = new SharedSessions(http, 0, settings.callTimeoutMs, QUEUE_SESSION_NAME);
  }

  async forAttempt(request: GrantRequest, signal: AbortSignal): Promise<GrantSession> {
    const ttlMs = sessionTtlFor(request.ttlMs);
    // A lapsing lock's key goes with its session: nothing of a lapsed lock stays behind.
    if (!request.autoRenew) return this.lapsing(ttlMs, signal);
    if (this.settings.sessionMode === 'shared') return this.pool.use(ttlMs, signal);
    const createdAt = Date.now();
    const id = await createSession(this.http, { ttlMs, lockDelayMs: this.settings.lockDelayMs, behavior: 'release' }, signal);
    return new OwnRenewedSession(this.http, id, ttlMs, createdAt, this.settings.callTimeoutMs, this.bound);
  }

  /**
   * A semaphore slot's own session, as Go's semaphore makes it: behaviour delete, so that a dead
   * holder's contender entry goes with its session and others prune it. Renewed unless autoRenew is
   * false; a spare one if there is (unless `fresh`).
   */
  async forSlot(request: GrantRequest, signal: AbortSignal, fresh = false): Promise<GrantSession> {
    const ttlMs = sessionTtlFor(request.ttlMs);
    if (!request.autoRenew) return this.lapsing(ttlMs, signal, SEMAPHORE_SESSION_NAME);
    const spare = fresh ? undefined : this.spares.take(ttlMs);
    if (spare) return spare;
    const createdAt = Date.now();
    const spec = { ttlMs, lockDelayMs: this.settings.lockDelayMs, behavior: 'delete', name: SEMAPHORE_SESSION_NAME } as const;
    const id = await createSession(this.http, spec, signal);
    return new OwnRenewedSession(this.http, id, ttlMs, createdAt, this.settings.callTimeoutMs, this.bound);
  }

  async lapsing(ttlMs: number, signal: AbortSignal, name = LOCK_SESSION_NAME): Promise<LapsingSession> {
    const id = await createSession(this.http, { ttlMs, lockDelayMs: this.settings.lockDelayMs, behavior: 'delete', name }, signal);
    return new LapsingSession(this.http, id, ttlMs, name, this.bound);
  }

  /**
   * A queue entry's session: the provider's shared queue session (whatever the session mode), so a
   * waiter costs no session of its own; a dead process's entries lose their session with it. It is
   * not the locks' shared session: an entry that may outlive its waiter has its session dropped
   * (dropQueueSession), which must never cost a held lock its key.
   */
  async forQueue(sessionTtlMs: number, signal: AbortSignal): Promise<GrantSession> {
    return this.queuePool.use(sessionTtlMs, signal);
  }

  /**
   * An entry's delete failed or its write may still land: its session goes at once (destroyed, never
   * renewed again), so the entry cannot stay live. The provider's other waiters on it find their
   * entries gone and queue again; a fault's cost, paid instead of a queue that waits forever.
   */
  dropQueueSession(id: string): void {
    this.queuePool.drop(id);
  }

  /** A session for inspect()'s lock-delay probe, which never holds anything: the shared one. */
  async probe(ttlMs: number, signal: AbortSignal): Promise<string> {
    return (await this.pool.get(sessionTtlFor(ttlMs), signal)).id;
  }

  /** A slot attempt's session that holds nothing (it found no free slot): kept for the next attempt, or destroyed. */
  spare(session: GrantSession): void {
    this.spares.keep(session);
  }

  /** Destroys the shared and spare sessions, each destroy bounded by `signal`. */
  async close(signal: AbortSignal): Promise<void> {
    await this.spares.close(signal);
    await Promise.all([this.pool.close(signal), this.queuePool.close(signal)]);
  }
}
