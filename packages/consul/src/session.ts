import { parseDuration } from '@holdfast/core';
import { sleep } from '@holdfast/core/backend';
import { LOCK_SESSION_NAME, MIN_SESSION_TTL_MS, RENEW_RETRY_MS, SESSION_TTL_MULTIPLIER } from './constants.js';
import { type ConsulHttp, ConsulHttpError } from './consul-http.js';

/*
 * Consul's session API, as the Go client's api/session.go has it: create, renew, destroy, info, and
 * RenewPeriodic (RenewedSession). Which grant gets which session is sessions.ts's business.
 */

/** Pause between session creates refused because the agent's node is not registered yet. */
const NODE_REGISTRATION_RETRY_MS = 100;

/**
 * Consul invalidates a session 2 x TTL after its last renewal, never sooner. A lease of `ttlMs`
 * therefore gets a session TTL of ttlMs / 2 (at least Consul's 10 s minimum): others can take the
 * key about `ttlMs` after the holder went silent (20 s for leases under 20 s), plus the lock-delay.
 */
export function sessionTtlFor(leaseMs: number): number {
  return Math.max(MIN_SESSION_TTL_MS, Math.ceil(leaseMs / SESSION_TTL_MULTIPLIER));
}

export interface SessionSpec {
  readonly ttlMs: number;
  /** Omitted: the server's default (15 s), as the Go semaphore does. */
  readonly lockDelayMs?: number;
  readonly name?: string;
  /** 'release' (locks) or 'delete' (semaphore contender entries, lapsing locks). */
  readonly behavior?: 'release' | 'delete';
}

/**
 * PUT /v1/session/create; returns the session id. A just-started agent answers "Missing node
 * registration" until its node is in the catalog: retried until `signal` aborts.
 */
export async function createSession(http: ConsulHttp, spec: SessionSpec, signal?: AbortSignal): Promise<string> {
  const body = JSON.stringify({
    Name: spec.name ?? LOCK_SESSION_NAME,
    TTL: `${spec.ttlMs}ms`,
    LockDelay: spec.lockDelayMs === undefined ? undefined : `${spec.lockDelayMs}ms`,
    Behavior: spec.behavior ?? 'release',
    // No node checks (Consul's default is the agent's serfHealth): a session then ends only at its
    // TTL, which the holder's own renewal deadline is built on. With serfHealth, a majority that
    // marks a partitioned agent's node failed frees its keys within seconds, while the holder on
    // the minority side still counts on its TTL: once the lock-delay is shorter than that gap, the
    // key is granted twice (the nemesis' majority/minority split did so with lockDelay=1s).
    NodeChecks: [],
  });
  for (;;) {
    try {
      const response = await http.call('PUT', '/v1/session/create', {}, { body, signal });
      return (JSON.parse(response.body) as { ID: string }).ID;
    } catch (error) {
      if (!(error instanceof ConsulHttpError) || !error.nodeNotRegisteredYet || !signal) throw error;
      // Without a signal there is no bound to retry within; with one, its abort ends the wait.
      await sleep(NODE_REGISTRATION_RETRY_MS, signal).catch(() => {
        throw error;
      });
    }
  }
}

/** The server's TTL for the session in ms, or undefined when the session is gone (404). */
export async function renewSession(http: ConsulHttp, id: string, signal?: AbortSignal): Promise<number | undefined> {
  const response = await http.call('PUT', `/v1/session/renew/${id}`, {}, { accept: [200, 404], signal });
  if (response.status === 404) return undefined;
  const [session] = JSON.parse(response.body) as { TTL?: string }[];
  return session?.TTL ? parseDuration(session.TTL, 'session TTL') : undefined;
}

export async function destroySession(http: ConsulHttp, id: string, signal?: AbortSignal): Promise<void> {
  await http.call('PUT', `/v1/session/destroy/${id}`, {}, { signal });
}

export interface SessionInfo {
  readonly ID: string;
  readonly Name: string;
  readonly Node: string;
  readonly TTL: string;
  readonly LockDelay: number;
  readonly Behavior: string;
  readonly CreateIndex: number;
}

export async function sessionInfo(http: ConsulHttp, id: string, signal?: AbortSignal): Promise<SessionInfo | null> {
  const response = await http.call('GET', `/v1/session/info/${id}`, {}, { accept: [200, 404], signal });
  if (response.status === 404) return null;
  const [info] = JSON.parse(response.body) as SessionInfo[];
  return info ?? null;
}

/** The most a session's bound stays short of its lock-delay (RenewedSession.boundMs). */
const LOCK_DELAY_MARGIN_MS = 250;
/**
 * The shortest lock-delay a session's bound follows: below it the bound stays the TTL. A shorter one
 * would renew more than once a second per session and give up after a single slow renewal on a
 * loaded machine; lock-delays that short are for tests (a full CI run with 1 s ones failed a
 * contention case), and the docs say what they leave unprotected.
 */
const MIN_LOCK_DELAY_BOUND_MS = 2000;

/**
 * A session renewed the Go client's way (RenewPeriodic): every half of its bound; after an error,
 * every second; given up once a whole bound passed without a success, or at once on 404. Adopts the
 * server's TTL. `onExpired` runs once, when the session must be presumed gone. Each renew is bounded
 * by `callTimeoutMs`, so a hung agent cannot hold a renewal past the point where the session is given up.
 *
 * The bound is the TTL, or the session's lock-delay when that is shorter (and at least 2 s). Consul can end
 * a session before its TTL, node checks or not (a node leaving the catalog ends every session of the
 * node: a cut-off server cleaned up as dead, `consul force-leave`). What still holds is the
 * lock-delay: nobody takes the session's keys until lockDelay after it ended, and it cannot end
 * before the last renewal that succeeded. So a holder that heard nothing for a lock-delay is told it
 * lost. docs/reliability.md has the partition that showed it.
 */
export class RenewedSession {
  private timer: NodeJS.Timeout | undefined;
  private lastSuccess: number;
  private ttlMs: number;
  /**
   * How long without a successful renewal the session is presumed gone (class comment): a little
   * short of the lock-delay, so that timers firing late still tell the holder before anyone is granted.
   */
  private get boundMs(): number {
    if (this.lockDelayMs < MIN_LOCK_DELAY_BOUND_MS) return this.ttlMs;
    return Math.min(this.ttlMs, this.lockDelayMs - Math.min(LOCK_DELAY_MARGIN_MS, this.lockDelayMs / 10));
  }
  private stopped = false;
  private inFlight: Promise<void> | undefined;
  private readonly stopping = new AbortController();

  constructor(
    private readonly http: ConsulHttp,
    readonly id: string,
    ttlMs: number,
    createdAt: number,
    private readonly callTimeoutMs: number,
    /** The session's lock-delay; below 2 s the bound stays the TTL (class comment). */
    private readonly lockDelayMs: number,
    private readonly onExpired: (detail: string, cause?: unknown) => void,
  ) {
    this.ttlMs = ttlMs;
    this.lastSuccess = createdAt;
    this.schedule(this.boundMs / 2);
  }

  /** By then Consul has invalidated the session unless someone renewed it since (it waits 2 x TTL). */
  get lapsedBy(): number {
    return this.lastSuccess + 2 * this.ttlMs;
  }

  /** Stops renewing (an in-flight renew is abandoned); destroys the session if asked. Never throws. */
  async stop(options: { destroy: boolean; signal?: AbortSignal }): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stopping.abort();
    await this.inFlight;
    if (options.destroy) {
      const signal = options.signal ?? AbortSignal.timeout(this.callTimeoutMs);
      await destroySession(this.http, this.id, signal).catch(() => undefined);
    }
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.inFlight = this.renew();
    }, delayMs);
  }

  private async renew(): Promise<void> {
    const sentAt = Date.now();
    const bound = Math.max(1, Math.min(this.callTimeoutMs, this.lastSuccess + this.boundMs - sentAt));
    try {
      const ttl = await renewSession(this.http, this.id, AbortSignal.any([this.stopping.signal, AbortSignal.timeout(bound)]));
      if (this.stopped) return;
      if (ttl === undefined) return this.expire('its Consul session was invalidated (renew: 404)');
      this.ttlMs = ttl;
      this.lastSuccess = sentAt;
      this.schedule(this.boundMs / 2);
    } catch (error) {
      if (this.stopped) return;
      if (error instanceof ConsulHttpError && !error.retryable) return this.expire('session renewal was refused', error);
      if (Date.now() - this.lastSuccess >= this.boundMs) {
        const what = this.boundMs < this.ttlMs ? 'its lock-delay' : 'a whole TTL';
        return this.expire(`session renewal failed for ${what}`, error);
      }
      this.schedule(Math.max(0, Math.min(RENEW_RETRY_MS, this.lastSuccess + this.boundMs - Date.now())));
    }
  }

  private expire(detail: string, cause?: unknown): void {
    this.stopped = true;
    this.onExpired(detail, cause);
  }
}
