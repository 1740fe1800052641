import type { LockInfo } from '@holdfast/core';
import { LockConflictError } from '@holdfast/core';
import { type BackendGrant, type Extension, NOT_HELD, type SlotRequest, stillHeld, TimerHeap, type WaitList } from '@holdfast/core/backend';

/** One held semaphore slot; held exactly while its key's slot set still contains it. */
class Slot implements BackendGrant {
  readonly acquiredAt = new Date();
  expiresAt: Date;
  readonly expiry = { run: () => this.table.expireDue(this.request.key) };

  constructor(
    private readonly table: MemorySlots,
    /** Replaced when another handle resumes the slot. */
    public request: SlotRequest,
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

interface SlotSet {
  readonly limit: number;
  readonly slots: Set<Slot>;
}

/** The semaphores of a MemoryStore: per key a limit and up to `limit` slots, sharing the key's token counter. */
export class MemorySlots {
  private readonly sets = new Map<string, SlotSet>();
  /** Armed on the next tick: a slot taken and released within one run of microtasks sets no Node timer. */
  private readonly timers = new TimerHeap(true);
  constructor(
    /** Everyone waiting for a change of a key; a freed slot wakes them all (they race in-process, cheaply). */
    private readonly changes: WaitList<string>,
    private readonly nextToken: (key: string) => bigint,
    private readonly lockedAsMutex: (key: string) => boolean,
  ) {}

  tryGrant(request: SlotRequest): Slot | null {
    const key = request.key;
    if (this.lockedAsMutex(key)) throw new LockConflictError(key, 'it is held as a plain lock, not a semaphore');
    const set = this.live(key);
    if (set && set.limit !== request.limit) {
      throw new LockConflictError(key, `it is in use as a semaphore with limit ${set.limit}, not ${request.limit}`);
    }
    if (set && set.slots.size >= set.limit) return null;
    const slot = new Slot(this, request, this.nextToken(key));
    const slots = set ?? { limit: request.limit, slots: new Set<Slot>() };
    slots.slots.add(slot);
    this.sets.set(key, slots);
    this.timers.schedule(slot.expiry, slot.expiresAt.getTime());
    return slot;
  }

  /** Whether the key has live slot holders (it is then not usable as a plain lock). */
  inUse(key: string): boolean {
    return this.live(key) !== undefined;
  }

  holders(key: string): LockInfo[] {
    const set = this.live(key);
    if (!set) return [];
    return [...set.slots].map((slot) => {
      const { owner, reason } = slot.request;
      return {
        key,
        owner,
        reason,
        acquiredAt: slot.acquiredAt,
        expiresAt: slot.expiresAt,
        token: slot.token,
        details: { limit: set.limit },
      };
    });
  }

  extend(slot: Slot, ttlMs: number): Extension {
    if (!this.holds(slot)) return NOT_HELD;
    slot.expiresAt = new Date(Date.now() + ttlMs);
    this.timers.schedule(slot.expiry, slot.expiresAt.getTime());
    return stillHeld(slot.expiresAt);
  }

  holds(slot: Slot): boolean {
    return this.live(slot.request.key)?.slots.has(slot) ?? false;
  }

  remove(slot: Slot): boolean {
    const set = this.sets.get(slot.request.key);
    if (!set?.slots.delete(slot)) return false;
    this.timers.cancel(slot.expiry);
    if (set.slots.size === 0) this.sets.delete(slot.request.key);
    this.changes.wakeAll(slot.request.key, undefined);
    return true;
  }

  /** The slot a handed-off semaphore slot still is (lockId and token), now telling `request`'s handle. */
  resume(request: SlotRequest, token: bigint): Slot | null {
    for (const slot of this.live(request.key)?.slots ?? []) {
      if (slot.request.lockId === request.lockId && slot.token === token) {
        slot.request = request;
        return slot;
      }
    }
    return null;
  }

  /** Frees the slot a request may hold although its answer was lost (owner-checked by lockId). */
  abandon(request: SlotRequest): void {
    for (const slot of this.live(request.key)?.slots ?? []) if (slot.request.lockId === request.lockId) this.remove(slot);
  }

  /** Administrative: frees every slot of the key and tells each holder. */
  forceRelease(key: string): boolean {
    const set = this.live(key);
    if (!set) return false;
    for (const slot of [...set.slots]) {
      this.remove(slot);
      slot.request.onLost('force-released by an administrator');
    }
    return true;
  }

  expireDue(key: string): void {
    const set = this.sets.get(key);
    if (!set) return;
    const now = Date.now();
    for (const slot of [...set.slots]) {
      if (slot.expiresAt.getTime() > now) continue;
      this.remove(slot);
      slot.request.onLost('its TTL ran out before it was renewed');
    }
  }

  private live(key: string): SlotSet | undefined {
    this.expireDue(key);
    return this.sets.get(key);
  }
}
