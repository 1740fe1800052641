import type { Collection, Db, Filter, FindOneAndUpdateOptions, ObjectId, UpdateFilter } from 'mongodb';
import { type Bound, throwIfAborted } from './bounded.js';
import { LOCKED, type LockDocument, UNLOCKED } from './documents.js';
import { isDuplicateKey } from './driver-errors.js';
import { prefixRange } from './key-range.js';
import type { Acquisition, HeldAcquisition, LockCatalog } from './lock-catalog.js';
import { MAJORITY } from './write-concern.js';

/**
 * MongoDB's DistLockCatalog, for mongod: every lock command is one findAndModify whose filter the
 * server evaluates atomically with the write, so a command delivered late is judged on the state it
 * meets (a grab of a lock someone else took meanwhile finds it held and fails). A grant and its
 * release are two commands. Reads take the caller's signal; a write, once sent, is left to finish
 * (the driver's socket timeout bounds it), so that whoever abandons a grab can free it once settled.
 */
export class DistLockCatalog implements LockCatalog {
  readonly locks: Collection<LockDocument>;

  constructor(
    db: Db,
    locksCollection: string,
    readonly processId: string,
  ) {
    this.locks = db.collection<LockDocument>(locksCollection, MAJORITY);
  }

  /**
   * Idempotent, and safe when many instances start at once (identical specs are a no-op). One index
   * per command: FerretDB drops the connection on a multi-index createIndexes whose indexes exist.
   */
  async ensureIndexes(bound: Bound): Promise<void> {
    throwIfAborted(bound);
    await this.locks.createIndex({ ts: 1 }, { name: 'ts_1' });
    throwIfAborted(bound);
    await this.locks.createIndex({ state: 1, process: 1 }, { name: 'state_1_process_1' });
  }

  /** Upsert on `{_id, state: 0}`: the new document, or null when busy (E11000: the upsert lost to a held lock). */
  async grabLock(acquisition: Acquisition, bound: Bound): Promise<LockDocument | null> {
    try {
      return await this.findAndModify(bound, { _id: acquisition.key, state: UNLOCKED }, this.acquire(acquisition), {
        upsert: true,
        returnDocument: 'after',
      });
    } catch (error) {
      if (isDuplicateKey(error)) return null;
      throw error;
    }
  }

  overtakeLock(acquisition: Acquisition, currentHolderTs: ObjectId, bound: Bound): Promise<LockDocument | null> {
    const { key } = acquisition;
    return this.findAndModify(
      bound,
      {
        $or: [
          { _id: key, state: UNLOCKED },
          { _id: key, ts: currentHolderTs },
        ],
      },
      this.acquire(acquisition),
      {
        returnDocument: 'after',
      },
    );
  }

  async unlock({ key, ts }: HeldAcquisition, bound: Bound): Promise<boolean> {
    const before = await this.findAndModify(bound, { _id: key, ts }, { $set: { state: UNLOCKED } }, { returnDocument: 'before' });
    return before?.state === LOCKED;
  }

  async unlockAll(bound: Bound): Promise<void> {
    throwIfAborted(bound);
    await this.locks.updateMany({ process: this.processId }, { $set: { state: UNLOCKED } });
  }

  async forceUnlock(key: string, bound: Bound): Promise<boolean> {
    const before = await this.findAndModify(
      bound,
      { _id: key, state: LOCKED },
      { $set: { state: UNLOCKED } },
      { returnDocument: 'before' },
    );
    return before !== null;
  }

  async extend({ key, ts }: HeldAcquisition, lease: number, bound: Bound): Promise<boolean> {
    const after = await this.findAndModify(
      bound,
      { _id: key, ts, state: LOCKED },
      { $set: { lease }, $currentDate: { extended: true } },
      { returnDocument: 'after' },
    );
    return after !== null;
  }

  getLockByName(key: string, bound: Bound): Promise<LockDocument | null> {
    return this.locks.findOne({ _id: key }, { signal: bound.signal });
  }

  lockedUnder(prefix: string, bound: Bound): Promise<LockDocument[]> {
    const range = prefixRange(prefix);
    return this.locks.find({ ...(range ? { _id: range } : {}), state: LOCKED }, { signal: bound.signal }).toArray();
  }

  async watchedDocuments(keys: readonly string[], bound: Bound): Promise<Map<string, LockDocument>> {
    const found = await this.locks.find({ _id: { $in: [...keys] } }, { signal: bound.signal }).toArray();
    return new Map(found.map((lock) => [lock._id, lock]));
  }

  /** One query for all of this process's locks, whatever `held` lists. */
  stillHeld(_held: readonly HeldAcquisition[], bound: Bound): Promise<{ _id: string; ts: ObjectId }[]> {
    return this.heldByProcess(bound);
  }

  heldByProcess(bound: Bound): Promise<{ _id: string; ts: ObjectId }[]> {
    return this.locks
      .find({ process: this.processId, state: LOCKED }, { projection: { _id: 1, ts: 1 }, batchSize: 10_000, signal: bound.signal })
      .toArray() as Promise<{ _id: string; ts: ObjectId }[]>;
  }

  private acquire(acquisition: Acquisition): UpdateFilter<LockDocument> {
    const { ts, lockId, who, why, lease, renew } = acquisition;
    return {
      $set: { ts, lockId, state: LOCKED as typeof LOCKED, who, process: this.processId, when: new Date(), why, lease, renew },
      $unset: { extended: '' as const },
      $inc: { fence: 1 },
    };
  }

  private findAndModify(
    bound: Bound,
    filter: Filter<LockDocument>,
    update: UpdateFilter<LockDocument>,
    options: FindOneAndUpdateOptions & { returnDocument: 'before' | 'after' },
  ): Promise<LockDocument | null> {
    throwIfAborted(bound);
    return this.locks.findOneAndUpdate(filter, update, options);
  }
}
