import { BackendError } from '@holdfast/core';
import type { Collection, Db, ObjectId } from 'mongodb';
import type { Bound } from './bounded.js';
import { LOCKED, type LockDocument, UNLOCKED } from './documents.js';
import { prefixRange } from './key-range.js';
import type { Acquisition, HeldAcquisition, LockCatalog } from './lock-catalog.js';
import { type LockFields, VersionChain } from './version-chain.js';

/** How often forceUnlock re-reads and retries when other writers keep moving the lock. */
const FORCE_ATTEMPTS = 5;
/** Chains list() walks at once: enough to fill the driver's pool, not to queue thousands of reads. */
const LIST_BATCH = 50;

/**
 * The lock commands for FerretDB v1, where a filter is never evaluated atomically with its write
 * (findAndModify, update and delete all read the matching documents, then write them back by `_id`;
 * measured: 8 racing `updateOne({_id, v: 0})` -> 2 to 8 report a modification). Every change (grab,
 * overtake, unlock, forced unlock) is the insert of the key's next version record (version-chain.ts):
 * a write delayed for any time after another change is refused by the server (E11000), so it can
 * never grant a lock twice. No latch, no timeout.
 *
 * Reads take the caller's signal; a write, once sent, is left to finish (the driver's socket
 * timeout bounds it), so that whoever abandons a grab can free it once it has settled.
 */
export class VersionedCatalog implements LockCatalog {
  private readonly chain: VersionChain;

  constructor(
    db: Db,
    locksCollection: string,
    readonly processId: string,
  ) {
    this.chain = new VersionChain(db, locksCollection);
  }

  get locks(): Collection<LockDocument> {
    return this.chain.mirrors;
  }

  ensureIndexes(bound: Bound): Promise<void> {
    return this.chain.ensureIndexes(bound);
  }

  async grabLock(acquisition: Acquisition, bound: Bound): Promise<LockDocument | null> {
    const current = await this.chain.head(acquisition.key, bound);
    // Our own earlier grab of this pass landed although its reply was lost.
    if (current?.state === LOCKED) return current.ts.equals(acquisition.ts) ? current : null;
    return this.chain.commit(acquisition.key, current, this.acquire(acquisition, current), bound);
  }

  async overtakeLock(acquisition: Acquisition, currentHolderTs: ObjectId, bound: Bound): Promise<LockDocument | null> {
    const current = await this.chain.head(acquisition.key, bound);
    if (current?.state === LOCKED && !current.ts.equals(currentHolderTs)) return current.ts.equals(acquisition.ts) ? current : null;
    return this.chain.commit(acquisition.key, current, this.acquire(acquisition, current), bound);
  }

  async unlock(held: HeldAcquisition, bound: Bound): Promise<boolean> {
    // Known version: try the release right away; if anything moved the lock since, read the chain.
    let current = held.granted?.version ? held.granted : await this.chain.head(held.key, bound);
    for (let attempt = 0; attempt < 2; attempt++) {
      if (current?.state !== LOCKED || !current.ts.equals(held.ts)) return false;
      if (await this.chain.commit(held.key, current, { ...fieldsOf(current), state: UNLOCKED }, bound)) return true;
      current = await this.chain.head(held.key, bound);
    }
    return false;
  }

  /** Every lock the mirrors show for this process, each released by its ts on the chain. */
  async unlockAll(bound: Bound): Promise<void> {
    for (const lock of await this.heldByProcess(bound)) await this.unlock({ key: lock._id, ts: lock.ts }, bound);
  }

  /** From the mirrors (a scan on FerretDB): a hint, confirmed on the chain before anything is decided. */
  heldByProcess(bound: Bound): Promise<{ _id: string; ts: ObjectId }[]> {
    return this.locks
      .find({ process: this.processId, state: LOCKED }, { projection: { _id: 1, ts: 1 }, signal: bound.signal })
      .toArray() as Promise<{ _id: string; ts: ObjectId }[]>;
  }

  async forceUnlock(key: string, bound: Bound): Promise<boolean> {
    for (let attempt = 0; attempt < FORCE_ATTEMPTS; attempt++) {
      const current = await this.chain.head(key, bound);
      if (current?.state !== LOCKED) return false;
      if (await this.chain.commit(key, current, { ...fieldsOf(current), state: UNLOCKED }, bound)) return true;
    }
    throw new BackendError('mongodb', `forceRelease: the lock changed ${FORCE_ATTEMPTS} times while it was being freed`);
  }

  /**
   * Rewrites the lease of our own version record (no other writer ever touches it), then checks that
   * no newer version exists: a record that is no longer the latest carries no lock, whatever it says.
   */
  async extend(held: HeldAcquisition, lease: number, bound: Bound): Promise<boolean> {
    const current = held.granted?.version ? held.granted : await this.chain.head(held.key, bound);
    if (current?.state !== LOCKED || !current.ts.equals(held.ts) || !current.version) return false;
    const updated = await this.chain.setLease(current, lease, bound);
    if (!updated || (await this.chain.read(held.key, current.version + 1, bound))) return false;
    await this.chain.mirror(updated, bound);
    return true;
  }

  getLockByName(key: string, bound: Bound): Promise<LockDocument | null> {
    return this.chain.head(key, bound);
  }

  /**
   * The mirrors in the key range say which keys exist and where their chains start; each key's
   * latest version decides (a mirror may lag or regress either way). A key whose very first mirror
   * write failed is not seen until a reader of that key repairs it.
   */
  async lockedUnder(prefix: string, bound: Bound): Promise<LockDocument[]> {
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
   * Per acquisition, two reads by `_id`: its own record must still be there with its ts (a server
   * restarted without its data has lost it), and no version after it may exist.
   */
  async stillHeld(held: readonly HeldAcquisition[], bound: Bound): Promise<{ _id: string; ts: ObjectId }[]> {
    const kept: { _id: string; ts: ObjectId }[] = [];
    for (const acquisition of held) {
      const version = acquisition.granted?.version;
      let stillOurs: boolean;
      if (version) {
        const [own, next] = await Promise.all([
          this.chain.read(acquisition.key, version, bound),
          this.chain.read(acquisition.key, version + 1, bound),
        ]);
        stillOurs = own?.state === LOCKED && own.ts.equals(acquisition.ts) && next === null;
      } else {
        const current = await this.chain.head(acquisition.key, bound);
        stillOurs = current?.state === LOCKED && current.ts.equals(acquisition.ts);
      }
      if (stillOurs) kept.push({ _id: acquisition.key, ts: acquisition.ts });
    }
    return kept;
  }

  private acquire(acquisition: Acquisition, base: LockDocument | null): LockFields {
    const { ts, lockId, who, why, lease, renew } = acquisition;
    const fence = Number(base?.fence ?? 0) + 1;
    return { ts, lockId, state: LOCKED, who, process: this.processId, when: new Date(), why, lease, renew, fence };
  }
}

function fieldsOf(lock: LockDocument): LockFields {
  const { _id, version, ...fields } = lock;
  return fields;
}
