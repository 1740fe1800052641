import type { GrantRequest } from '@holdfast/core/backend';
import { LOCK_SESSION_NAME, QUEUE_SESSION_NAME, SEMAPHORE_SESSION_NAME } from './constants.js';
import type { ConsulHttp } from './consul-http.js';
import { createSession, destroySession, RenewedSession, renewSession, sessionTtlFor } from './session.js';
import { SharedSessions } from './session-pool.js';

/**
 * The session one grant (or one attempt) holds its key with: its own (OwnSession, the Go client's
 * one session per Lock) or a use of the provider's shared one (session-pool.ts).
 */
export interface GrantSession {
  readonly id: string;
  /** Fixed at creation: a lapsing grant extended with another TTL moves to a new session. */
  readonly ttlMs: number;
  /** Set by the grant: told once the session must be presumed gone (renewal refused or failed for a TTL). */
  onExpired: ((detail: string, cause?: unknown) => void) | undefined;
  /** A lost or releasing grant stops keeping its key alive (a shared session goes on for the others). */
  stopRenewing(): void;
  /**
   * Gives the session back once the key no longer holds it: an own one is destroyed, a shared one
   * left. Never throws; without a signal, bounded like any clean-up nobody waits for.
   */
  leave(signal?: AbortSignal): Promise<void>;
  /** The attempt's write went unanswered and may land late: this session must not keep it alive. */
  disown(): void;
  /** Consul refused the session as invalid: never hand it out again. */
  discard(): void;
}

/**
 * A session of one grant, as each Go Lock and Semaphore has: renewed (RenewPeriodic) unless the
 * grant lapses (autoRenew: false, renewed only by extend()), destroyed when given back.
 */
export class OwnSession implements GrantSession {
  onExpired: GrantSession['onExpired'];
  private readonly renewed: RenewedSession | undefined;

  constructor(
    private readonly http: ConsulHttp,
    readonly id: string,
    readonly ttlMs: number,
    /** A lock's or a slot's: the session that replaces a lapsing one on a move is named alike. */
    readonly name: string,
    /** Omitted for a lapsing grant: nobody renews it, and its lease's end is core's to report. */
    renewal: { readonly createdAt: number; readonly callTimeoutMs: number; readonly lockDelayMs: number } | undefined,
    private readonly bound: () => AbortSignal,
  ) {
    this.renewed =
      renewal &&
      new RenewedSession(http, id, ttlMs, renewal.createdAt, renewal.callTimeoutMs, renewal.lockDelayMs, (...why) =>
        this.onExpired?.(...why),
      );
  }

  get lapsing(): boolean {
    return this.renewed === undefined;
  }

  /** extend() of a lapsing grant with the same session TTL: false when the session is gone. */
  async renew(signal: AbortSignal): Promise<boolean> {
    return (await renewSession(this.http, this.id, signal)) !== undefined;
  }

  stopRenewing(): void {
    void this.renewed?.stop({ destroy: false });
  }

  async leave(signal = this.bound()): Promise<void> {
    if (this.renewed) return this.renewed.stop({ destroy: true, signal });
    await destroySession(this.http, this.id, signal).catch(() => undefined);
  }

  disown(): void {
    void this.leave();
  }

  discard(): void {}
}

/** How long a spare waits for the provider's next slot attempt before it is destroyed. */
const SPARE_IDLE_MS = 5000;
/** Spares kept per session TTL; beyond (a burst of losers), they are destroyed at once. */
const MAX_SPARES = 8;

interface Spare {
  readonly session: OwnSession;
  readonly timer: NodeJS.Timeout;
}

/**
 * Renewed slot sessions that hold nothing: an attempt made one, then found no free slot after all
 * (another contender's claim landed first). Every slot needs a session of its own (holders are named
 * by session), and creating then destroying one is two Raft writes, more than the lost race itself;
 * under contention most woken attempts lose (docs/semantics-consul.md has the measurement). A spare
 * serves the provider's next slot attempt with the same session TTL; unused for SPARE_IDLE_MS, or
 * once its renewal fails, it is destroyed.
 */
export class SpareSessions {
  private readonly byTtl = new Map<number, Spare[]>();
  private closed = false;

  take(ttlMs: number): OwnSession | undefined {
    const spare = this.byTtl.get(ttlMs)?.pop();
    if (!spare) return undefined;
    clearTimeout(spare.timer);
    spare.session.onExpired = undefined;
    return spare.session;
  }

  keep(session: GrantSession): void {
    const spares = this.byTtl.get(session.ttlMs) ?? [];
    if (this.closed || !(session instanceof OwnSession) || session.lapsing || spares.length >= MAX_SPARES) {
      void session.leave();
      return;
    }
    const spare: Spare = { session, timer: setTimeout(() => this.drop(spare), SPARE_IDLE_MS) };
    session.onExpired = () => this.drop(spare);
    spares.push(spare);
    this.byTtl.set(session.ttlMs, spares);
  }

  /** Destroys every spare, each destroy bounded by `signal`. */
  async close(signal: AbortSignal): Promise<void> {
    this.closed = true;
    const spares = [...this.byTtl.values()].flat();
    this.byTtl.clear();
    await Promise.all(
      spares.map((spare) => {
        clearTimeout(spare.timer);
        return spare.session.leave(signal);
      }),
    );
  }

  private drop(spare: Spare): void {
    const spares = this.byTtl.get(spare.session.ttlMs);
    const at = spares?.indexOf(spare) ?? -1;
    if (at < 0) return;
    spares!.splice(at, 1);
    clearTimeout(spare.timer);
    void spare.session.leave();
  }
}

export interface SessionSettings {
  readonly sessionMode: 'shared' | 'per-lock';
  readonly lockDelayMs: number;
  readonly callTimeoutMs: number;
}

/**
 * The provider's session source. A lock's session is the provider's shared one (sessionMode
 * 'shared': N locks, one renewal) or its own (sessionMode 'per-lock', the Go client's way); a slot's
 * is always its own (holders are named by session), a spare one when there is; a lapsing grant's is
 * its own, never renewed. Queue entries have a shared session of their own (forQueue).
 */
export class Sessions {
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

  /** A lock attempt's session. A lapsing lock's key goes with its session (behaviour delete): nothing of it stays behind. */
  forLock(request: Pick<GrantRequest, 'ttlMs' | 'autoRenew'>, signal: AbortSignal): Promise<GrantSession> {
    const ttlMs = sessionTtlFor(request.ttlMs);
    if (!request.autoRenew) return this.own(ttlMs, LOCK_SESSION_NAME, 'delete', false, signal);
    if (this.settings.sessionMode === 'shared') return this.pool.use(ttlMs, signal);
    return this.own(ttlMs, LOCK_SESSION_NAME, 'release', true, signal);
  }

  /**
   * A semaphore slot's own session, as Go's semaphore makes it: behaviour delete, so that a dead
   * holder's contender entry goes with its session and others prune it. Renewed unless autoRenew is
   * false; a spare one if there is (unless `fresh`).
   */
  forSlot(request: Pick<GrantRequest, 'ttlMs' | 'autoRenew'>, signal: AbortSignal, fresh = false): Promise<GrantSession> {
    const ttlMs = sessionTtlFor(request.ttlMs);
    const spare = request.autoRenew && !fresh ? this.spares.take(ttlMs) : undefined;
    if (spare) return Promise.resolve(spare);
    return this.own(ttlMs, SEMAPHORE_SESSION_NAME, 'delete', request.autoRenew, signal);
  }

  /** The new session a lapsing grant moves to when extended with another TTL. */
  lapsing(ttlMs: number, name: string, signal: AbortSignal): Promise<OwnSession> {
    return this.own(ttlMs, name, 'delete', false, signal);
  }

  /**
   * A queue entry's session: the provider's shared queue session (whatever the session mode), so a
   * waiter costs no session of its own; a dead process's entries lose their session with it. It is
   * not the locks' shared session: an entry that may outlive its waiter has its session dropped
   * (dropQueueSession), which must never cost a held lock its key.
   */
  forQueue(sessionTtlMs: number, signal: AbortSignal): Promise<GrantSession> {
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

  private async own(
    ttlMs: number,
    name: string,
    behavior: 'release' | 'delete',
    renewed: boolean,
    signal: AbortSignal,
  ): Promise<OwnSession> {
    const createdAt = Date.now();
    const id = await createSession(this.http, { ttlMs, lockDelayMs: this.settings.lockDelayMs, behavior, name }, signal);
    const renewal = renewed ? { createdAt, callTimeoutMs: this.settings.callTimeoutMs, lockDelayMs: this.settings.lockDelayMs } : undefined;
    return new OwnSession(this.http, id, ttlMs, name, renewal, this.bound);
  }
}
