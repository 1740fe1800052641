import type { LockInfo } from '@holdfast/core';
import { LockConflictError } from '@holdfast/core';
import {
  type BackendGrant,
  type Extension,
  type GrantRequest,
  isModeRequest,
  isSlotRequest,
  type ModeRequest,
  NOT_HELD,
  type QueuePlace,
  type ScheduledTask,
  type SlotRequest,
  stillHeld,
  TimerHeap,
  WaitList,
  type WaitOptions,
} from '@holdfast/core/backend';
import { MemoryReadWrite } from './memory-read-write.js';
import { MemorySlots } from './memory-slots.js';
import { WaitingLine } from './waiting-line.js';

/**
 * One held lock. It is its own grant, held exactly while the store's entry for its key is this
 * object, and its own expiry task on the store's timer (run()).
 */
class Entry implements BackendGrant, ScheduledTask {
  readonly acquiredAt = new Date();
  expiresAt: Date;

  constructor(
    private readonly store: MemoryStore,
    /** Replaced when another handle resumes the lock (its onLost is the one to tell). */
    public request: GrantRequest,
    readonly token: bigint,
  ) {
    this.expiresAt = new Date(this.acquiredAt.getTime() + request.ttlMs);
  }

  async extend(ttlMs: number): Promise<Extension> {
    return this.store.extend(this, ttlMs);
  }

  async release(): Promise<boolean> {
    return this.store.release(this);
  }

  async isHeld(): Promise<boolean> {
    return this.store.holds(this);
  }

  run(): void {
    this.store.expireIfDue(this.request.key);
  }
}

/**
 * The shared state of in-memory locks. Several providers may use one store, each standing for a
 * process. Expiries share one timer; waiters line up per key in FIFO order and a release calls the
 * first of them to take the key, so nobody polls.
 */
export class MemoryStore {
  private readonly entries = new Map<string, Entry>();
  private readonly tokens = new Map<string, bigint>();
  private readonly line = new WaitingLine();
  /** Armed on the next tick: a lock taken and released within one run of microtasks sets no Node timer. */
  private readonly timers = new TimerHeap(true);
  /** Wakes observers and semaphore waiters on any release of a key (plain lock waiters queue FIFO instead). */
  readonly changes = new WaitList<string>();
  readonly readWrite = new MemoryReadWrite(this.changes, (key) => this.nextToken(key));
  readonly slots = new MemorySlots(
    this.changes,
    (key) => this.nextToken(key),
    (key) => this.current(key) !== undefined || this.readWrite.inUse(key),
  );

  /** A free key goes to the first place in its line (or to anyone when nobody waits); a busy place joins the line. */
  tryGrant(request: GrantRequest): BackendGrant | null {
    const { key, place } = request;
    this.expireIfDue(key);
    if (this.slots.inUse(key)) throw new LockConflictError(key, 'it is in use as a semaphore');
    if (this.readWrite.inUse(key)) throw new LockConflictError(key, 'it is in use as a read-write lock');
    if (this.entries.has(key) || !this.line.mayTake(key, place?.id)) {
      if (place) this.line.join(key, place.id);
      return null;
    }
    const entry = this.grant(request);
    if (place) this.line.leave(key, place.id, false);
    return entry;
  }

  tryGrantSlot(request: SlotRequest): BackendGrant | null {
    return this.slots.tryGrant(request);
  }

  tryGrantMode(request: ModeRequest): BackendGrant | null {
    const key = request.key;
    if (this.slots.inUse(key)) throw new LockConflictError(key, 'it is in use as a semaphore');
    if (this.current(key)) throw new LockConflictError(key, 'it is held as a plain lock, not a read-write lock');
    return this.readWrite.tryGrant(request);
  }

  /**
   * How many calls wait in this store now, on every key: acquires waiting for their turn or a
   * release, observers. An app's tests can check with it that nothing they started still waits.
   */
  waitingCalls(): number {
    return this.line.waitingNow() + this.changes.size();
  }

  /** A place in the key's line waits for its turn; anyone else (a semaphore waiter, an observer) for any release. */
  async waitForChange(key: string, options: WaitOptions): Promise<void> {
    const place = options.place;
    if (place && this.line.has(key, place.id)) {
      await this.line.waitForTurn(key, place.id, this.current(key) === undefined, options);
    } else if (!(place && this.readWrite.mayGoNow(key, place.id))) {
      await this.changes.wait(key, options);
    }
  }

  leaveQueue(key: string, place: QueuePlace): void {
    this.readWrite.leaveLine(key, place.id);
    this.line.leave(key, place.id, this.current(key) === undefined);
  }

  /** Frees the key if `request`'s grant holds it. */
  abandon(request: GrantRequest): void {
    if (isSlotRequest(request)) {
      this.slots.abandon(request);
      return;
    }
    if (isModeRequest(request)) {
      this.readWrite.abandon(request);
      return;
    }
    const entry = this.current(request.key);
    if (entry?.request.lockId === request.lockId) this.remove(entry);
  }

  extend(entry: Entry, ttlMs: number): Extension {
    if (!this.holds(entry)) return NOT_HELD;
    entry.expiresAt = new Date(Date.now() + ttlMs);
    this.timers.schedule(entry, entry.expiresAt.getTime());
    return stillHeld(entry.expiresAt);
  }

  release(entry: Entry): boolean {
    if (!this.holds(entry)) return false;
    this.remove(entry);
    return true;
  }

  holds(entry: Entry): boolean {
    return this.current(entry.request.key) === entry;
  }

  /** The entry or slot a handed-off lock still is (lockId and token), now telling `request`'s handle; else a grant that is gone. */
  resume(request: GrantRequest | SlotRequest, token: bigint): BackendGrant {
    if ('limit' in request && request.limit !== undefined) return this.slots.resume(request, token) ?? GONE;
    const entry = this.entries.get(request.key);
    if (!entry || entry.request.lockId !== request.lockId || entry.token !== token) return GONE;
    entry.request = request;
    return entry;
  }

  forceRelease(key: string): boolean {
    if (this.slots.forceRelease(key) || this.readWrite.forceRelease(key)) return true;
    const entry = this.current(key);
    if (!entry) return false;
    this.remove(entry);
    entry.request.onLost('force-released by an administrator');
    return true;
  }

  inspect(key: string): LockInfo | null {
    const entry = this.current(key);
    return entry ? this.infoOf(entry) : null;
  }

  list(prefix: string): LockInfo[] {
    const found: LockInfo[] = [];
    for (const key of [...this.entries.keys()]) {
      if (!key.startsWith(prefix)) continue;
      const entry = this.current(key);
      if (entry) found.push(this.infoOf(entry));
    }
    return found.sort((a, b) => (a.key < b.key ? -1 : 1));
  }

  expireIfDue(key: string): void {
    const entry = this.entries.get(key);
    if (!entry || entry.expiresAt.getTime() > Date.now()) return;
    this.remove(entry);
    entry.request.onLost('its TTL ran out before it was renewed');
  }

  private current(key: string): Entry | undefined {
    this.expireIfDue(key);
    return this.entries.get(key);
  }

  private infoOf(entry: Entry): LockInfo {
    const { key, owner, reason } = entry.request;
    const details = { waiters: this.line.size(key) };
    return { key, owner, reason, acquiredAt: entry.acquiredAt, expiresAt: entry.expiresAt, token: entry.token, details };
  }

  private nextToken(key: string): bigint {
    const token = (this.tokens.get(key) ?? 0n) + 1n;
    this.tokens.set(key, token);
    return token;
  }

  private grant(request: GrantRequest): Entry {
    const entry = new Entry(this, request, this.nextToken(request.key));
    this.entries.set(request.key, entry);
    this.timers.schedule(entry, entry.expiresAt.getTime());
    return entry;
  }

  /** Frees the key: its longest-waiting place is called to take it, observers are told. */
  private remove(entry: Entry): void {
    const key = entry.request.key;
    this.entries.delete(key);
    this.timers.cancel(entry);
    this.changes.wakeAll(key, undefined);
    this.line.callFirst(key);
  }
}

/** What a resume of a lock that is no longer there gets: every call answers that it is not held. */
const GONE: BackendGrant = Object.freeze({
  token: 0n,
  acquiredAt: new Date(0),
  expiresAt: new Date(0),
  extend: async (): Promise<Extension> => NOT_HELD,
  release: async () => false,
  isHeld: async () => false,
});
