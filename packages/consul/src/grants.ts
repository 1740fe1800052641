import type { GrantProof } from './ownership.js';
import type { Monitored } from './prefix-watch.js';
import type { RenewedSession } from './sessions.js';
import type { SessionUser } from './session-pool.js';

/**
 * How a grant's session lives:
 * - shared: the provider's renewed session (default for auto-renewed locks);
 * - renewed: its own renewed session (sessionMode 'per-lock', the Go client's way);
 * - lapsing: its own session that nobody renews (autoRenew: false), extended only by extend().
 */
export type SessionKind = 'shared' | 'renewed' | 'lapsing';

/** What the backend remembers about one grant it made, until it is released or lost. */
export class GrantState implements SessionUser, Monitored, GrantProof {
  lost = false;

  constructor(
    readonly key: string,
    readonly consulKey: string,
    readonly lockId: string,
    public session: string,
    public token: bigint,
    readonly kind: SessionKind,
    public sessionTtlMs: number,
    readonly renewed: RenewedSession | undefined,
    private readonly reportLost: (grant: GrantState, detail: string, cause?: unknown) => void,
  ) {}

  /** Own sessions are destroyed with the grant; the shared one outlives it. */
  get ownsSession(): boolean {
    return this.kind !== 'shared';
  }

  readonly onLost = (detail: string, cause?: unknown): void => {
    if (this.lost) return;
    this.lost = true;
    this.reportLost(this, detail, cause);
  };

  onSessionExpired(detail: string, cause?: unknown): void {
    this.onLost(detail, cause);
  }
}
