import type { LockInfo } from '@holdfast/core';
import {
  type BackendGrant,
  type Extension,
  type LockMode,
  type ModeRequest,
  NOT_HELD,
  stillHeld,
  TimerHeap,
  type WaitList,
} from '@holdfast/core/backend';

/** One reader's or the writer's grant; held exactly while its key's holder set contains it. */
class ModeGrant implements BackendGrant {
  readonly acquiredAt = new Date();
  expiresAt: Date;
  readonly expiry = { run: () => this.table.expireDue(this.request.key) };

  constructor(
    private readonly table: MemoryReadWrite,
    readonly request: ModeRequest,
    readonly token: bigint,
  ) {
    this.expiresAt = new Date(this.acquiredAt.getTime() + request.ttlMs);
  }

  async extend(ttlMs: number): Promise<Extension> {
    return this.table.extend(this, ttlMs);
  }

  async release(): Promise<boolean> {
    return this.table.remove(this);
  }

  async isHeld(): Promise<boolean> {
    return this.table.holds(this);
  }
}

/**
 * The read-write locks of a MemoryStore: per key its holders (readers, or one writer) and a line of
 * waiting places in arrival order. A place goes when its mode fits the holders and everyone ahead
 * of it in line could go with it (only readers ahead of a reader): a waiting writer is never
 * overtaken by a reader that came after it, and readers waiting together are granted together.
 */
export class MemoryReadWrite {
  private readonly holdersByKey = new Map<string, Set<ModeGrant>>();
  private readonly lines = new Map<string, Map<string, LockMode>>();
  private readonly timers = new TimerHeap(true);

  constructor(
    /** A release or a place leaving wakes every waiter of the key; the line decides who goes. */
    private readonly changes: WaitList<string>,
    private readonly nextToken: (key: string) => bigint,
  ) {}

  tryGrant(request: ModeRequest): ModeGrant | null {
    const { key, mode, place } = request;
    const holders = this.live(key);
    if (!this.fits(holders, mode) || !this.isTurnOf(key, place?.id, mode)) {
      if (place) this.lineOf(key).set(place.id, mode);
      return null;
    }
    if (place) this.leaveLine(key, place.id);
    const grant = new ModeGrant(this, request, this.nextToken(key));
    const set = holders ?? new Set<ModeGrant>();
    set.add(grant);
    this.holdersByKey.set(key, set);
    this.timers.schedule(grant.expiry, grant.expiresAt.getTime());
    return grant;
  }

  /**
   * Whether a place in line could go now: its release may have come between its busy answer and its
   * wait, and a wait begun after the wake-up would sleep through it.
   */
  mayGoNow(key: string, placeId: string): boolean {
    const mode = this.lines.get(key)?.get(placeId);
    return mode !== undefined && this.fits(this.live(key), mode) && this.isTurnOf(key, placeId, mode);
  }

  /** Whether the key has live read-write holders (it is then not usable as a plain lock or semaphore). */
  inUse(key: string): boolean {
    return this.live(key) !== undefined;
  }

  holders(key: string): LockInfo[] {
    return [...(this.live(key) ?? [])].map((grant) => {
      const { owner, reason, mode } = grant.request;
      return { key, owner, reason, acquiredAt: grant.acquiredAt, expiresAt: grant.expiresAt, token: grant.token, details: { mode } };
    });
  }

  extend(grant: ModeGrant, ttlMs: number): Extension {
    if (!this.holds(grant)) return NOT_HELD;
    grant.expiresAt = new Date(Date.now() + ttlMs);
    this.timers.schedule(grant.expiry, grant.expiresAt.getTime());
    return stillHeld(grant.expiresAt);
  }

  holds(grant: ModeGrant): boolean {
    return this.live(grant.request.key)?.has(grant) ?? false;
  }

  remove(grant: ModeGrant): boolean {
    const key = grant.request.key;
    const set = this.holdersByKey.get(key);
    if (!set?.delete(grant)) return false;
    this.timers.cancel(grant.expiry);
    if (set.size === 0) this.holdersByKey.delete(key);
    this.changes.wakeAll(key, undefined);
    return true;
  }

  abandon(request: ModeRequest): void {
    for (const grant of this.live(request.key) ?? []) if (grant.request.lockId === request.lockId) this.remove(grant);
  }

  /** A waiting acquire ended without a grant: whoever waited behind it may go now. */
  leaveLine(key: string, placeId: string): void {
    const line = this.lines.get(key);
    if (!line?.delete(placeId)) return;
    if (line.size === 0) this.lines.delete(key);
    this.changes.wakeAll(key, undefined);
  }

  forceRelease(key: string): boolean {
    const holders = this.live(key);
    if (!holders) return false;
    for (const grant of [...holders]) {
      this.remove(grant);
      grant.request.onLost('force-released by an administrator');
    }
    return true;
  }

  expireDue(key: string): void {
    const now = Date.now();
    for (const grant of [...(this.holdersByKey.get(key) ?? [])]) {
      if (grant.expiresAt.getTime() > now) continue;
      this.remove(grant);
      grant.request.onLost('its TTL ran out before it was renewed');
    }
  }

  private fits(holders: Set<ModeGrant> | undefined, mode: LockMode): boolean {
    if (!holders) return true;
    return mode === 'shared' && ![...holders].some((grant) => grant.request.mode === 'exclusive');
  }

  /** A place in line goes when nobody ahead of it must go first; a caller without a place counts as last. */
  private isTurnOf(key: string, placeId: string | undefined, mode: LockMode): boolean {
    const line = this.lines.get(key);
    if (!line) return true;
    for (const [ahead, aheadMode] of line) {
      if (ahead === placeId) return true;
      if (mode === 'exclusive' || aheadMode === 'exclusive') return false;
    }
    return true;
  }

  private lineOf(key: string): Map<string, LockMode> {
    let line = this.lines.get(key);
    if (!line) this.lines.set(key, (line = new Map()));
    return line;
  }

  private live(key: string): Set<ModeGrant> | undefined {
    this.expireDue(key);
    return this.holdersByKey.get(key);
  }
}
