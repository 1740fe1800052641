import { BackendError } from '@holdfast/core';
import type { Collection, Db, ObjectId } from 'mongodb';
import { allowManyListeners, type Bound } from '../bounded.js';
import { LOCKED, type LockDocument, SLOTS, UNLOCKED } from '../documents.js';
import { prefixRange } from '../key-range.js';
import type { Acquisition, HeldAcquisition, LockCatalog } from '../lock-catalog.js';
import type { ServerInfoReader } from '../server-info.js';
import { type LockFields, sameCommit } from './records.js';
import { SlotCatalog } from './slot-catalog.js';
import { holdsIn, isSlotState, KeyHasSlots } from './slot-state.js';
import { CHAIN_TIMING, type ChainRead, type ChainTiming, VersionChain } from './version-chain.js';

/** How often forceUnlock re-reads and retries when other writers keep moving the lock. */
const FORCE_ATTEMPTS = 5;
/** Holder checks at once. */
const CHECK_BATCH = 4;
/** Above this many held locks, the holder check is one query instead of two reads per lock. */
const READS_UP_TO = 16;
/** Chains list() walks at once: enough to fill the driver's pool, not to queue thousands of reads. */
const LIST_BATCH = 50;

/**
 * The lock commands for FerretDB v1, where a filter is never evaluated atomically with its write
 * (findAndModify, update and delete all read the matching documents, then write them back by `_id`,
 * so several racing conditional updates can all succeed: docs/semantics-mongodb.md). Every change
 * (grab, overtake, unlock, forced unlock) is the insert of the key's next version record
 * (version-chain.ts): a write delayed for any time after another change is refused by the server
 * (E11000) or, where its id was pruned, not acted on, so it can never grant a lock twice.
 *
 * Reads take the caller's signal; a write, once sent, is left to finish (the driver's socket
 * timeout bounds it), so that whoever abandons a grab can free it once it has settled.
 */
export class VersionedCatalog implements LockCatalog {
  private readonly chain: VersionChain;
  /** Semaphores and read-write locks, on the same version records: a key is a lock or a holder list at each version. */
  readonly slots: SlotCatalog;

  constructor(
    db: Db,
    locksCollection: string,
    readonly processId: string,
    readServerInfo: ServerInfoReader,
    private readonly timing: ChainTiming = CHAIN_TIMING,
  ) {
    this.chain = new VersionChain(db, locksCollection, timing);
    this.slots = new SlotCatalog(this.chain, processId, db, readServerInfo);
  }

  get locks(): Collection<LockDocument> {
    return this.chain.mirrors.collection;
  }

  ensureIndexes(bound: Bound): Promise<void> {
    return this.chain.mirrors.ensureIndexes(bound);
  }

  async grabLock(acquisition: Acquisition, bound: Bound): Promise<LockDocument | null> {
    // Taken again soon after this provider's own release: based on that commit, no need to read
    // (rule 4 of VersionChain); when another writer was first, the insert fails and the key is read.
    const own = this.chain.recentOwnCommit(acquisition.key);
    if (own?.current?.state === UNLOCKED) {
      const taken = await this.chain.commit(acquisition.key, own, this.acquire(acquisition, own.current), bound);
      if (taken) return taken;
    }
    const read = await this.chain.head(acquisition.key, bound);
    const { current } = read;
    throwIfSlotsHeld(current);
    // Our own earlier grab of this pass landed although its reply was lost.
    if (current?.state === LOCKED) return current.ts.equals(acquisition.ts) ? current : null;
    return this.chain.commit(acquisition.key, read, this.acquire(acquisition, current), bound);
  }

  async overtakeLock(acquisition: Acquisition, currentHolderTs: ObjectId, bound: Bound): Promise<LockDocument | null> {
    const read = await this.chain.head(acquisition.key, bound);
    const { current } = read;
    throwIfSlotsHeld(current);
    if (current?.state === LOCKED && !current.ts.equals(currentHolderTs)) return current.ts.equals(acquisition.ts) ? current : null;
    return this.chain.commit(acquisition.key, read, this.acquire(acquisition, current), bound);
  }

  async unlock(held: HeldAcquisition, bound: Bound): Promise<boolean> {
    const known = held.granted;
    // Released soon after the grant: based on the grant's own read, no need to read again (a late
    // reply is refused by the act window, as for any commit; another writer first, and the key is read).
    const fresh =
      known?.version && known.readStartedAt !== undefined && performance.now() - known.readStartedAt < this.timing.actWindowMs / 2
        ? { current: known, startedAt: known.readStartedAt }
        : undefined;
    if (isSlotState(known)) return this.slots.release(held, bound, fresh);
    if (fresh && (await this.commitUnlock(held.key, fresh, bound))) return true;
    for (let attempt = 0; attempt < 2; attempt++) {
      const read = await this.chain.head(held.key, bound);
      if (isSlotState(read.current)) return this.slots.release(held, bound, read);
      if (read.current?.state !== LOCKED || !read.current.ts.equals(held.ts)) return false;
      if (await this.commitUnlock(held.key, read, bound)) return true;
    }
    return false;
  }

  /** Every lock the mirrors show for this process, each released by its ts on the chain. */
  async unlockAll(bound: Bound): Promise<void> {
    allowManyListeners(bound);
    for (const lock of await this.heldByProcess(bound)) await this.unlock({ key: lock._id, ts: lock.ts }, bound);
  }

  /**
   * From the mirrors (a scan on FerretDB, one for locks and slots): a hint, confirmed on the chain
   * before anything is decided. A slot of this process counts as one entry, by its own ts.
   */
  async heldByProcess(bound: Bound): Promise<{ _id: string; ts: ObjectId }[]> {
    const mirrors = await this.locks
      .find(
        { $or: [{ process: this.processId, state: LOCKED }, { state: SLOTS }] },
        { projection: { _id: 1, ts: 1, state: 1, holders: 1 }, signal: bound.signal },
      )
      .toArray();
    return mirrors.flatMap((lock) =>
      isSlotState(lock)
        ? lock.holders.filter((holder) => holder.process === this.processId).map((holder) => ({ _id: lock._id, ts: holder.ts }))
        : [{ _id: lock._id, ts: lock.ts }],
    );
  }

  async forceUnlock(key: string, bound: Bound): Promise<boolean> {
    for (let attempt = 0; attempt < FORCE_ATTEMPTS; attempt++) {
      const read = await this.chain.head(key, bound);
      if (isSlotState(read.current)) return this.slots.clear(key, bound, read);
      if (read.current?.state !== LOCKED) return false;
      if (await this.commitUnlock(key, read, bound)) return true;
    }
    throw new BackendError('mongodb', `forceRelease: the lock changed ${FORCE_ATTEMPTS} times while it was being freed`);
  }

  /**
   * Rewrites the lease of our own version record (no other writer ever touches it) once the next
   * version is known to be missing: a record that is no longer the latest carries no lock.
   */
  async extend(held: HeldAcquisition, lease: number, bound: Bound): Promise<boolean> {
    const own = held.granted;
    if (isSlotState(own)) return (await this.slots.extend(held, lease, bound)) !== null;
    if (!own?.version || (await this.chain.read(held.key, own.version + 1, bound))) return false;
    const updated = await this.chain.setLease(own, lease, bound);
    if (!updated || !sameCommit(updated, own)) return false;
    await this.chain.mirrors.write(updated, bound);
    return true;
  }

  async getLockByName(key: string, bound: Bound): Promise<LockDocument | null> {
    return (await this.chain.head(key, bound)).current;
  }

  /** The mirrors in the key range say which keys exist; each key's latest version decides. */
  async lockedUnder(prefix: string, bound: Bound): Promise<LockDocument[]> {
    allowManyListeners(bound);
    const range = prefixRange(prefix);
    const mirrors = await this.locks.find(range ? { _id: range } : {}, { signal: bound.signal }).toArray();
    const locked: LockDocument[] = [];
    for (let at = 0; at < mirrors.length; at += LIST_BATCH) {
      const batch = mirrors.slice(at, at + LIST_BATCH);
      for (const lock of await Promise.all(batch.map((mirror) => this.chain.headFrom(mirror._id, mirror, bound)))) {
        if (lock?.state === LOCKED) locked.push(lock);
      }
    }
    return locked;
  }

  /**
   * Per acquisition: its own version must still be the key's latest (a wiped server has lost it too).
   * Few: two reads by `_id` each, a few at a time so that the check does not crowd out grants. Many:
   * one query of their keys' records (evaluated in Go, but once instead of a scan per read).
   */
  async stillHeld(held: readonly HeldAcquisition[], bound: Bound): Promise<{ _id: string; ts: ObjectId }[]> {
    allowManyListeners(bound);
    if (held.length > READS_UP_TO) return this.stillHeldByQuery(held, bound);
    const kept: { _id: string; ts: ObjectId }[] = [];
    for (let at = 0; at < held.length; at += CHECK_BATCH) {
      const batch = held.slice(at, at + CHECK_BATCH);
      const verdicts = await Promise.all(batch.map((acquisition) => this.isStillHeld(acquisition, bound)));
      for (const [i, acquisition] of batch.entries()) if (verdicts[i]) kept.push({ _id: acquisition.key, ts: acquisition.ts });
    }
    return kept;
  }

  /**
   * One read by `_id` per key (any other filter is evaluated in Go on FerretDB, not pushed down to
   * SQLite): the version after the latest this provider knows, so that a waiter sees a release
   * once its record is inserted, before its mirror is written; the mirror of a key it knows nothing of.
   * `seen` moves the read on past what the watch already saw (a hint only: see VersionChain.watch).
   */
  async watchedDocuments(
    keys: readonly string[],
    bound: Bound,
    seen?: ReadonlyMap<string, LockDocument | null>,
  ): Promise<Map<string, LockDocument>> {
    const found = await Promise.all(keys.map((key) => this.chain.watch(key, bound, seen?.get(key))));
    return new Map(found.filter((lock): lock is LockDocument => lock !== null).map((lock) => [lock._id, lock]));
  }

  /** Deletes the version records whose prune delay has passed (the pinger calls this every second). */
  housekeeping(bound: Bound): Promise<void> {
    return this.chain.prunes.drain(bound);
  }

  private async stillHeldByQuery(held: readonly HeldAcquisition[], bound: Bound): Promise<{ _id: string; ts: ObjectId }[]> {
    const latest = await this.chain.latestOf([...new Set(held.map((acquisition) => acquisition.key))], bound);
    return held
      .filter((acquisition) => {
        const current = latest.get(acquisition.key);
        const own = acquisition.granted;
        if (isSlotState(own)) return holdsIn(current, acquisition.ts);
        if (!current || current.state !== LOCKED || !current.ts.equals(acquisition.ts)) return false;
        return !own?.version || sameCommit(current, own);
      })
      .map((acquisition) => ({ _id: acquisition.key, ts: acquisition.ts }));
  }

  private async isStillHeld(acquisition: HeldAcquisition, bound: Bound): Promise<boolean> {
    if (isSlotState(acquisition.granted)) return holdsIn((await this.chain.head(acquisition.key, bound)).current, acquisition.ts);
    if (acquisition.granted?.version) return this.chain.isLatest(acquisition.granted, bound);
    const { current } = await this.chain.head(acquisition.key, bound);
    return current?.state === LOCKED && current.ts.equals(acquisition.ts);
  }

  private commitUnlock(key: string, read: ChainRead, bound: Bound): Promise<LockDocument | null> {
    return this.chain.commit(key, read, { ...fieldsOf(read.current!), state: UNLOCKED }, bound);
  }

  private acquire(acquisition: Acquisition, base: LockDocument | null): LockFields {
    const { ts, lockId, who, why, lease, renew } = acquisition;
    const fence = Number(base?.fence ?? 0) + 1;
    return { ts, lockId, state: LOCKED, who, process: this.processId, when: new Date(), why, lease, renew, fence };
  }
}

/** A plain lock grab must not commit over a holder list that has holders (the backend judges them). */
function throwIfSlotsHeld(current: LockDocument | null): void {
  if (isSlotState(current) && current.holders.length > 0) throw new KeyHasSlots(current);
}

function fieldsOf(lock: LockDocument & { readStartedAt?: number }): LockFields {
  const { _id, version, commit, readStartedAt, ...fields } = lock;
  return fields;
}
