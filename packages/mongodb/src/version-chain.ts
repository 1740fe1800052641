import type { Collection, Db } from 'mongodb';
import { type Bound, throwIfAborted } from './bounded.js';
import type { LockDocument, VersionRecord } from './documents.js';
import { isDuplicateKey } from './driver-errors.js';
import { whileSqliteBusy } from './sqlite-busy.js';
import { MAJORITY } from './write-concern.js';

/** A lock document's fields without its identity: what a new version records. */
export type LockFields = Omit<LockDocument, '_id' | 'version'>;

/**
 * Each key's lock states on FerretDB as immutable version records `<version>:<key>` in
 * `<locks>.versions`, and the `locks` document of the key as a mirror of the latest one. The one
 * atomic check FerretDB v1 has is a unique `_id` on insert, so of all writers that read version n,
 * exactly one can insert n + 1, whenever its insert arrives. Every read is by exact `_id`, the only
 * filter FerretDB v1 pushes down to SQLite.
 *
 * The mirror is written after each insert and by any reader that finds it behind; it may lag or
 * (after a delayed mirror write) regress, so it is only where the walk to the latest version starts.
 */
export class VersionChain {
  readonly mirrors: Collection<LockDocument>;
  readonly records: Collection<VersionRecord>;

  constructor(db: Db, locksCollection: string) {
    this.mirrors = db.collection<LockDocument>(locksCollection, MAJORITY);
    this.records = db.collection<VersionRecord>(`${locksCollection}.versions`, MAJORITY);
  }

  /** The same indexes as on mongod, for the mirror documents (one per command: see catalog.ts). */
  async ensureIndexes(bound: Bound): Promise<void> {
    throwIfAborted(bound);
    await this.mirrors.createIndex({ ts: 1 }, { name: 'ts_1' });
    throwIfAborted(bound);
    await this.mirrors.createIndex({ state: 1, process: 1 }, { name: 'state_1_process_1' });
  }

  async head(key: string, bound: Bound): Promise<LockDocument | null> {
    return this.headFrom(key, await this.mirrors.findOne({ _id: key }, { signal: bound.signal }), bound);
  }

  /**
   * The latest version of the key: from the version the mirror names, follow the chain while a next
   * record exists. Records are never deleted, so versions 1..latest all exist and the walk cannot
   * stop early. A key without records is at version 0, whose state is the mirror itself (a document
   * written by MongoDB or by an adapter version without records).
   */
  async headFrom(key: string, mirror: LockDocument | null, bound: Bound): Promise<LockDocument | null> {
    let version = mirror?.version ?? 0;
    let current = mirror;
    if (version > 0) {
      const record = await this.read(key, version, bound);
      if (record) current = toLock(record);
    }
    for (;;) {
      const next = await this.read(key, version + 1, bound);
      if (!next) break;
      version = next.version;
      current = toLock(next);
    }
    // Read repair: a writer that never heard back (its connection died) never wrote the mirror, and
    // the holder's orphan sweep and list() look there.
    if (current && current.version !== mirror?.version) await this.mirror(current, bound);
    return current;
  }

  /** Inserts the version after `base`; null when another writer inserted it first (whenever that was). */
  async commit(key: string, base: LockDocument | null, fields: LockFields, bound: Bound): Promise<LockDocument | null> {
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

  /** Rewrites the lease of a record (only its holder ever does); the record after, or null if it is gone. */
  async setLease(lock: LockDocument, lease: number, bound: Bound): Promise<LockDocument | null> {
    throwIfAborted(bound);
    const updated = await whileSqliteBusy(bound, () =>
      this.records.findOneAndUpdate(
        { _id: recordId(lock._id, lock.version ?? 0) },
        { $set: { lease }, $currentDate: { extended: true } },
        { returnDocument: 'after' },
      ),
    );
    return updated && toLock(updated);
  }

  /** Best effort: the chain is the truth, the mirror only a starting point and a view for tools. */
  async mirror(lock: LockDocument, bound: Bound): Promise<void> {
    const { _id, ...fields } = lock;
    await whileSqliteBusy(bound, () => this.mirrors.replaceOne({ _id }, fields, { upsert: true })).catch(() => undefined);
  }

  async read(key: string, version: number, bound: Bound): Promise<VersionRecord | null> {
    return this.records.findOne({ _id: recordId(key, version) }, { signal: bound.signal });
  }
}

function recordId(key: string, version: number): string {
  return `${version}:${key}`;
}

function toLock(record: VersionRecord): LockDocument {
  const { _id, key, ...fields } = record;
  return { ...fields, _id: key };
}
