import { type BackendGrant, type CallContext, type Extension, NOT_HELD, stillHeld } from '@holdfast/core/backend';
import type { Event } from 'node-zookeeper-client';
import type { ZkSession } from './session.js';
import type { ZkCalls } from './zk-calls.js';

type State = 'held' | 'lost' | 'freed';

/** Where a grant lives and how it reports its loss. */
export interface GrantPlace {
  readonly calls: ZkCalls;
  readonly session: ZkSession;
  /** The contender's znode. */
  readonly path: string;
  /** Its data version when granted: release and checks compare it, so a rewritten node is not ours. */
  readonly version: number;
  readonly token: bigint;
  readonly acquiredAt: Date;
  readonly autoRenew: boolean;
  readonly ttlMs: number;
  readonly onLost: (detail: string, cause?: unknown) => void;
  /** After the node is deleted: the key's znode is removed if nobody else contends (best effort). */
  readonly afterFree: () => Promise<void>;
}

/**
 * A lock or slot held by an ephemeral sequential znode of the provider's session. It is lost when
 * the node goes (forceRelease, an expired session: its watch tells), when the session is suspended
 * or expires (Curator's rule: in doubt, lost), or, without auto-renewal, when its TTL runs out (the
 * node is deleted then, so the key is free for others as a lease would be).
 */
export class ZkGrant implements BackendGrant {
  private state: State = 'held';
  /** The server answered a delete of the node (deleted, or not ours any more): nothing left to free. */
  private removalAnswered = false;
  readonly token: bigint;
  readonly acquiredAt: Date;
  expiresAt: Date | null;
  private lapse: NodeJS.Timeout | undefined;
  private readonly unsubscribe: () => void;

  constructor(private readonly place: GrantPlace) {
    this.token = place.token;
    this.acquiredAt = place.acquiredAt;
    this.expiresAt = place.autoRenew ? null : new Date(Date.now() + place.ttlMs);
    this.unsubscribe = place.session.onLoss((_loss, detail) => this.lose(detail));
    if (!place.autoRenew) this.lapseIn(place.ttlMs);
  }

  get path(): string {
    return this.place.path;
  }

  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    if (!(await this.isHeld(call))) return NOT_HELD;
    if (this.place.autoRenew) return stillHeld(null);
    this.lapseIn(ttlMs);
    return stillHeld(this.expiresAt);
  }

  /**
   * Deletes the node until the server has answered once. A holder told of a SUSPENDED connection
   * keeps its node while its session survives (it moves to another member): core's let-go calls
   * release again until the server answers, and each call must still try, or the key stays blocked
   * by a node nobody holds for as long as the session lives.
   */
  async release(call: CallContext): Promise<boolean> {
    if (this.removalAnswered) return false;
    this.stop('freed');
    const removed = await this.place.calls.remove(this.place.path, this.place.version, call.signal);
    this.removalAnswered = true;
    if (removed) await this.place.afterFree().catch(() => undefined);
    return removed;
  }

  async isHeld(call: CallContext): Promise<boolean> {
    if (this.state !== 'held') return false;
    if (!this.place.session.connected) {
      this.lose('the ZooKeeper session is not connected');
      return false;
    }
    const stat = await this.place.calls.exists(this.place.path, call.signal);
    if (stat !== null && stat.version === this.place.version) return true;
    this.lose('its znode is gone or was rewritten');
    return false;
  }

  /** The node's watch, set by the read that granted it, fired once: deleted (forceRelease, expiry) or rewritten; both end the grant. */
  onWatch(event: Event): void {
    if (this.state === 'held') this.lose(`its znode ${this.place.path} changed: ${event.getName()}`);
  }

  private lapseIn(ttlMs: number): void {
    clearTimeout(this.lapse);
    this.expiresAt = new Date(Date.now() + ttlMs);
    this.lapse = setTimeout(() => {
      // The lease ran out: free the key for others, as a lease would; the holder was told by core already.
      this.lose('its TTL ran out (autoRenew: false)');
      void this.place.calls
        .remove(this.place.path, this.place.version, AbortSignal.timeout(this.place.session.sessionTimeoutMs))
        .then((removed) => (removed ? this.place.afterFree() : undefined))
        .catch(() => undefined);
    }, ttlMs);
  }

  private lose(detail: string): void {
    if (this.state !== 'held') return;
    this.stop('lost');
    this.place.onLost(detail);
  }

  private stop(state: State): void {
    if (this.state === 'freed') return;
    this.state = state;
    clearTimeout(this.lapse);
    this.unsubscribe();
  }
}
