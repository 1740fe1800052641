import { type BackendGrant, type CallContext, type Extension, type GrantRequest, NOT_HELD, stillHeld } from '@holdfast/core/backend';
import type { ObjectId } from 'mongodb';
import { bounded } from './bounded.js';
import type { LockDocument } from './documents.js';
import { holdsIn } from './ferretdb/index.js';
import type { LiveGrants } from './live-grants.js';
import type { HeldAcquisition, LockCatalog } from './lock-catalog.js';

/** What a grant needs from its provider instance. */
export interface GrantHost {
  readonly catalog: LockCatalog;
  readonly live: LiveGrants;
  /** Queues an unlock by ts for the pinger to retry until the server confirms it. */
  unlockSoon(key: string, ts: ObjectId): void;
}

/**
 * One acquisition, of a lock, a semaphore slot or a read-write grant: its session id (ts) and the
 * document its grab returned (on FerretDB, its version says where to look for changes; for a slot
 * or a read-write grant, the holder-list state its take committed). Every command it sends is
 * filtered by that ts, so it only ever extends, checks or frees this acquisition, never a later holder's.
 */
export class MongoGrant implements BackendGrant, HeldAcquisition {
  readonly key: string;
  readonly token: bigint;
  readonly acquiredAt: Date;
  readonly expiresAt: Date | null;
  /** Local time the grant was confirmed: holder checks sent earlier cannot know about it. */
  readonly grantedAt = Date.now();
  private leaseMs: number;

  constructor(
    private readonly host: GrantHost,
    private readonly request: GrantRequest,
    readonly ts: ObjectId,
    readonly granted: LockDocument,
    /** Local time the request was sent: a contender cannot have seen the lock earlier. */
    readonly sentAt: number,
  ) {
    this.key = request.key;
    this.token = BigInt(granted.fence ?? 0);
    this.acquiredAt = granted.when;
    this.expiresAt = request.autoRenew ? null : new Date(sentAt + request.ttlMs);
    this.leaseMs = request.ttlMs;
  }

  /** True while the process ping keeps it alive (autoRenew); otherwise its lease runs out. */
  get renewedByPings(): boolean {
    return this.request.autoRenew;
  }

  get lease(): number {
    return this.leaseMs;
  }

  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    const started = Date.now();
    if (!(await bounded(call, this.host.catalog.extend(this, ttlMs, call)))) {
      this.host.live.delete(this);
      return NOT_HELD;
    }
    this.leaseMs = ttlMs;
    return stillHeld(this.request.autoRenew ? null : new Date(started + ttlMs));
  }

  async release(call: CallContext): Promise<boolean> {
    this.host.live.delete(this);
    const unlock = this.host.catalog.unlock(this, call);
    try {
      return await bounded(call, unlock);
    } catch (error) {
      // Unconfirmed: retried by the pinger until the server answers (a release never leaves a lock held);
      // an unlock cut short by the signal is queued once it has settled, not while it may still land.
      if (call.signal.aborted) void unlock.catch(() => undefined).then(() => this.host.unlockSoon(this.key, this.ts));
      else this.host.unlockSoon(this.key, this.ts);
      throw error;
    }
  }

  async isHeld(call: CallContext): Promise<boolean> {
    // A read with the call's signal, so no bounded() (see bounded.ts); a late "not held" is still true.
    const current = await this.host.catalog.getLockByName(this.key, call);
    const held = holdsIn(current, this.ts);
    if (!held) this.host.live.delete(this);
    return held;
  }

  /** The pinger found it gone, or its pings stopped for too long: the holder is told at once. */
  lose(detail: string, cause?: unknown): void {
    if (this.host.live.delete(this)) this.request.onLost(detail, cause);
  }
}
