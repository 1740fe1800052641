import type { Collection, Db } from 'mongodb';
import { type Bound, throwIfAborted } from '../bounded.js';
import type { LockDocument } from '../documents.js';
import { isDuplicateKey } from '../driver-errors.js';
import { MAJORITY } from '../write-concern.js';
import { sameCommit } from './records.js';
import { whileSqliteBusy } from './sqlite-busy.js';

/**
 * The `locks` document of each key (`_id` = key, MongoDB's fields plus `version` and `commit`): a
 * mirror of a recent version record, written after each commit and repaired by any reader that finds
 * it behind. It may lag or, after a delayed write, regress: it is only where a walk starts (see
 * VersionChain) and what tools, change streams and the orphan sweep see. No decision trusts it.
 */
export class Mirrors {
  readonly collection: Collection<LockDocument>;

  constructor(db: Db, locksCollection: string) {
    this.collection = db.collection<LockDocument>(locksCollection, MAJORITY);
  }

  /** The same indexes as on mongod (one per command: see ../mongod-catalog.ts). */
  async ensureIndexes(bound: Bound): Promise<void> {
    throwIfAborted(bound);
    await this.collection.createIndex({ ts: 1 }, { name: 'ts_1' });
    throwIfAborted(bound);
    await this.collection.createIndex({ state: 1, process: 1 }, { name: 'state_1_process_1' });
  }

  read(key: string, bound: Bound): Promise<LockDocument | null> {
    return this.collection.findOne({ _id: key }, { signal: bound.signal });
  }

  /**
   * Best effort: the records are the truth, the mirror a starting point and a view for tools. A
   * first mirror is inserted (an update scans the collection on FerretDB; an insert does not).
   */
  async write(lock: LockDocument, bound: Bound, create = false): Promise<void> {
    const { _id, ...fields } = lock;
    const replace = () => whileSqliteBusy(bound, () => this.collection.replaceOne({ _id }, fields, { upsert: true }));
    const write = create
      ? whileSqliteBusy(bound, () => this.collection.insertOne(lock)).catch((error: unknown) =>
          isDuplicateKey(error) ? replace() : Promise.reject(error),
        )
      : replace();
    await write.catch(() => undefined);
  }

  /** Read repair: the mirror moves to what the walk found, so the next walk starts there. */
  async repaired(latest: LockDocument | null, mirror: LockDocument | null, bound: Bound): Promise<LockDocument | null> {
    if (latest && latest !== mirror && !(mirror && sameCommit(latest, mirror))) await this.write(latest, bound);
    return latest;
  }
}
