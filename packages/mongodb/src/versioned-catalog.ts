import type { Collection, Db, ObjectId } from 'mongodb';
import { type Bound, throwIfAborted } from './bounded.js';
import { isDuplicateKey } from './driver-errors.js';
import { LOCKED, UNLOCKED, type LockDocument, type VersionRecord } from './documents.js';
import type { Acquisition, HeldAcquisition, LockCatalog } from './lock-catalog.js';
import { whileSqliteBusy } from './sqlite-busy.js';
import { MAJORITY } from './write-concern.js';

type LockFields = Omit<LockDocument, '_id' | 'version'>;

/** How often forceUnlock re-reads and retries when other writers keep moving the lock. */
const FORCE_ATTEMPTS = 5;

/**
 * The lock commands for FerretDB v1, where a filter is never evaluated atomically with its write
 * (findAndModify, update and delete all read the matching documents, then write them back by `_id`;
 * measured: 8 racing `updateOne({_id, v: 0})` -> 2 to 8 report a modification). The one atomic
 * check it has is a unique `_id` on insert. So the state of a lock is a chain of immutable version
 * records `<version>:<key>` in `<locks>.versions`, and every change (grab, overtake, unlock,
 * forced unlock) is the insert of the next version: of all writers that read version n, exactly
 * one can insert n + 1, whenever its insert arrives. A write delayed for any time after another
 * change is refused by the server (E11000), so it can never grant a lock twice. No latch, no timeout.
 *
 * The `locks` document of each key is a mirror of the latest version for tools, change streams and
 * the holder's orphan sweep, written after each insert and by any reader that finds it behind; it
 * may lag or (after a delayed mirror write) regress, so decisions never trust it: it only says where
 * to start reading the chain.
 * Every read is by exact `_id`, the only filter FerretDB v1 pushes down to SQLite.
 *
 * Reads take the caller's signal; a write, once sent, is left to finish (the driver's socket
 * timeout bounds it), so that whoever abandons a grab can free it once it has settled.
 */
export class VersionedCatalog implements LockCatalog {
  readonly locks: Collection<LockDocument>;
  readonly records: Collection<VersionRecord>;

  constructor(
    db: Db,
    locksCollection: string,
    readonly processId: string,
  ) {
    this.locks = db.collection<LockDocument>(locksCollection, MAJORITY);
    this.records = db.collection<VersionRecord>(`${locksCollection}.versions`, MAJORITY);
  }

  /** The same indexes as on mongod, for the mirror documents (one per command: see catalog.ts). */
  async ensureIndexes(bound: Bound): Promise<void> {
    throwIfAborted(bound);
    await this.locks.createIndex({ ts: 1 }, { name: 'ts_1' });
    throwIfAborted(bound);
    await this.locks.createIndex({ state: 1, process: 1 }, { name: 'state_1_process_1' });
  }

  async grabLock(acquisition: Acquisition, bound: Bound): Promise<LockDocument | null> {
    const current = await this.head(acquisition.key, bound);
    // Our own earlier grab landed although its reply was lost.
    if (current?.state === LOCKED) return current.ts.equals(acquisition.ts) ? current : null;
    return this.commit(acquisition.key, current, this.acquire(acquisition, current), bound);
  }

  async overtakeLock(acquisition: Acquisition, currentHolderTs: ObjectId, bound: Bound): Promise<LockDocument | null> {
    const current = await this.head(acquisition.key, bound);
    if (current?.state === LOCKED && !current.ts.equals(currentHolderTs)) return current.ts.equals(acquisition.ts) ? current : null;
    return this.commit(acquisition.key, current, this.acquire(acquisition, current), bound);
  }

  async unlock(held: HeldAcquisition, bound: Bound): Promise<boolean> {
    // Known version: try the release right away; if anything moved the lock since, read the chain.
    let current = held.granted?.version ? held.granted : await this.head(held.key, bound);
    for (let attempt = 0; attempt < 2; attempt++) {
      if (current?.state !== LOCKED || !current.ts.equals(held.ts)) return false;
      if (await this.commit(held.key, current, { ...fieldsOf(current), state: UNLOCKED }, bound)) return true;
      current = await this.head(held.key, bound);
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
      const current = await this.head(key, bound);
      if (current?.state !== LOCKED) return false;
      if (await this.commit(key, current, { ...fieldsOf(current), state: UNLOCKED }, bound)) return true;
    }
    throw new Error(`forceUnlock(${key}): the lock changed ${FORCE_ATTEMPTS} times while it was being freed`);
  }

  /**
   * Rewrites the lease of our own version record (no other writer ever touches it), then checks that
   * no newer version exists: a record that is no longer the latest carries no lock, whatever it says.
   */
  async extend(held: HeldAcquisition, lease: number, bound: Bound): Promise<boolean> {
    const current = held.granted?.version ? held.granted : await this.head(held.key, bound);
    if (current?.state !== LOCKED || !current.ts.equals(held.ts) || !current.version) return false;
    throwIfAborted(bound);
    const updated = await whileSqliteBusy(bound, () =>
      this.records.findOneAndUpdate(
        { _id: recordId(held.key, current.version!) },
        { $set: { lease }, $currentDate: { extended: true } },
        { returnDocument: 'after' },
      ),
    );
    if (!updated || (await this.readRecord(held.key, current.version + 1, bound))) return false;
    await this.mirror(toLock(updated), bound);
    return true;
  }

  getLockByName(key: string, bound: Bound): Promise<LockDocument | null> {
    return this.head(key, bound);
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
        const [own, next] = await Promise.all([this.readRecord(acquisition.key, version, bound), this.readRecord(acquisition.key, version + 1, bound)]);
        stillOurs = own?.state === LOCKED && own.ts.equals(acquisition.ts) && next === null;
      } else {
        const current = await this.head(acquisition.key, bound);
        stillOurs = current?.state === LOCKED && current.ts.equals(acquisition.ts);
      }
      if (stillOurs) kept.push({ _id: acquisition.key, ts: acquisition.ts });
    }
    return kept;
  }

  /**
   * The latest version of the key: from the version the mirror names, follow the chain while a next
   * record exists. Records are never deleted, so versions 1..latest all exist and the walk cannot
   * stop early. A key without records is at version 0, whose state is the mirror itself (a document
   * written by MongoDB or by an adapter version without records).
   */
  private async head(key: string, bound: Bound): Promise<LockDocument | null> {
    const mirror = await this.locks.findOne({ _id: key }, { signal: bound.signal });
    let version = mirror?.version ?? 0;
    let current = mirror;
    if (version > 0) {
      const record = await this.readRecord(key, version, bound);
      if (record) current = toLock(record);
    }
    for (;;) {
      const next = await this.readRecord(key, version + 1, bound);
      if (!next) break;
      version = next.version;
      current = toLock(next);
    }
    // Read repair: a writer that never heard back (its connection died) never wrote the mirror, and
    // the holder's orphan sweep looks there (a grab abandoned by its caller must not stay held).
    if (current && current.version !== mirror?.version) await this.mirror(current, bound);
    return current;
  }

  /** Inserts the version after `base`; null when another writer inserted it first (whenever that was). */
  private async commit(key: string, base: LockDocument | null, fields: LockFields, bound: Bound): Promise<LockDocument | null> {
    const version = (base?.version ?? 0) + 1;
    const record: VersionRecord = { ...fields, _id: recordId(key, version), key, version };
    throwIfAborted(bound);
    try {
      await whileSqliteBusy(bound, () => this.records.insertOne(record));
    } catch (error) {
      if (isDuplicateKey(error)) return null;
      throw error;
    }
    const lock = toLock(record);
    await this.mirror(lock, bound);
    return lock;
  }

  /** Best effort: the chain is the truth, the mirror only a starting point and a view for tools. */
  private async mirror(lock: LockDocument, bound: Bound): Promise<void> {
    const { _id, ...fields } = lock;
    await whileSqliteBusy(bound, () => this.locks.replaceOne({ _id }, fields, { upsert: true })).catch(() => undefined);
  }

  private readRecord(key: string, version: number, bound: Bound): Promise<VersionRecord | null> {
    return this.records.findOne({ _id: recordId(key, version) }, { signal: bound.signal });
  }

  private acquire(acquisition: Acquisition, base: LockDocument | null): LockFields {
    const { ts, who, why, lease, renew } = acquisition;
    const fence = Number(base?.fence ?? 0) + 1;
    return { ts, state: LOCKED, who, process: this.processId, when: new Date(), why, lease, renew, fence };
  }
}

function recordId(key: string, version: number): string {
  return `${version}:${key}`;
}

function toLock(record: VersionRecord): LockDocument {
  const { _id, key, ...fields } = record;
  return { ...fields, _id: key };
}

function fieldsOf(lock: LockDocument): LockFields {
  const { _id, version, ...fields } = lock;
  return fields;
}
