import { MIN_SESSION_TTL_MS, SESSION_TTL_MULTIPLIER } from './constants.js';
import type { ConsulHttp } from './consul-http.js';
import { destroySession, RenewedSession, renewSession } from './session.js';

/**
 * How a grant's session lives:
 * - shared: the provider's renewed session (default for auto-renewed locks): N locks, one renewal;
 * - renewed: its own renewed session (sessionMode 'per-lock', the Go client's way);
 * - lapsing: its own session that nobody renews (autoRenew: false), extended only by extend().
 */
export type SessionKind = 'shared' | 'renewed' | 'lapsing';

/** The session one grant (or one attempt) holds its key with. */
export interface GrantSession {
  readonly id: string;
  readonly kind: SessionKind;
  /** Fixed at creation: a lapsing lock extended with another TTL moves to a new session. */
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
  /** The attempt's lock write went unanswered and may land late: this session must not keep it alive. */
  disown(): void;
  /** Consul refused the session as invalid: never hand it out again. */
  discard(): void;
}

/**
 * Consul invalidates a session 2 x TTL after its last renewal, never sooner. A lease of `ttlMs`
 * therefore gets a session TTL of ttlMs / 2 (at least Consul's 10 s minimum): others can take the
 * key about `ttlMs` after the holder went silent (20 s for leases under 20 s), plus the lock-delay.
 */
export function sessionTtlFor(leaseMs: number): number {
  return Math.max(MIN_SESSION_TTL_MS, Math.ceil(leaseMs / SESSION_TTL_MULTIPLIER));
}

export class OwnRenewedSession implements GrantSession {
  readonly kind = 'renewed';
  onExpired: GrantSession['onExpired'];
  private readonly renewed: RenewedSession;

  constructor(
    http: ConsulHttp,
    readonly id: string,
    readonly ttlMs: number,
    createdAt: number,
    callTimeoutMs: number,
    private readonly bound: () => AbortSignal,
  ) {
    this.renewed = new RenewedSession(http, id, ttlMs, createdAt, callTimeoutMs, (detail, cause) => this.onExpired?.(detail, cause));
  }

  stopRenewing(): void {
    void this.renewed.stop({ destroy: false });
  }

  leave(signal = this.bound()): Promise<void> {
    return this.renewed.stop({ destroy: true, signal });
  }

  disown(): void {
    void this.leave();
  }

  discard(): void {}
}

export class LapsingSession implements GrantSession {
  readonly kind = 'lapsing';
  // Nobody renews it: the lease's end is core's to report, not the session's.
  onExpired: GrantSession['onExpired'];

  constructor(
    private readonly http: ConsulHttp,
    readonly id: string,
    readonly ttlMs: number,
    /** A lock's or a slot's: the session that replaces it on a move is named alike. */
    readonly name: string,
    private readonly bound: () => AbortSignal,
  ) {}

  /** extend() with the same session TTL: false when the session is gone. */
  async renew(signal: AbortSignal): Promise<boolean> {
    return (await renewSession(this.http, this.id, signal)) !== undefined;
  }

  stopRenewing(): void {}

  async leave(signal = this.bound()): Promise<void> {
    await destroySession(this.http, this.id, signal).catch(() => undefined);
  }

  disown(): void {
    void this.leave();
  }

  discard(): void {}
}
