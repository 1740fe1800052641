import type { Collection, Db, Filter, FindOneAndUpdateOptions, ObjectId, UpdateFilter } from 'mongodb';
import { findAndModifyById } from './id-pushdown.js';
import { isDuplicateKey } from './driver-errors.js';
import { LOCKED, UNLOCKED, type LatchDocument, type LockDocument, type PingDocument } from './documents.js';
import { MutationLatch, whileSqliteBusy } from './mutation-latch.js';
import type { DistLockSettings } from './options.js';

/** The fields one acquisition writes (MongoDB's grabLock / overtakeLock `$set`, plus Holdfast's). */
export interface Acquisition {
  readonly key: string;
  readonly ts: ObjectId;
  readonly who: string;
  readonly why: string;
  readonly lease: number;
  readonly renew: boolean;
}

const MAJORITY = { writeConcern: { w: 'majority' as const, wtimeoutMS: 15_000 } };

/**
 * MongoDB's DistLockCatalog: every command the lock protocol sends, one method each, with write
 * concern majority. Mutations of one lock document run through `latch` where the server needs it.
 */
export class DistLockCatalog {
  readonly locks: Collection<LockDocument>;
  readonly pings: Collection<PingDocument>;
  private readonly latch: MutationLatch | undefined;

  constructor(
    readonly db: Db,
    settings: DistLockSettings,
    readonly processId: string,
    serializeMutations: boolean,
  ) {
    this.locks = db.collection<LockDocument>(settings.locksCollection, MAJORITY);
    this.pings = db.collection<PingDocument>(settings.pingsCollection, MAJORITY);
    this.latch = serializeMutations
      ? new MutationLatch(db.collection<LatchDocument>(`${settings.locksCollection}.latches`, MAJORITY))
      : undefined;
  }

  /**
   * Idempotent, and safe when many instances start at once (identical specs are a no-op). One index
   * per command: FerretDB drops the connection on a multi-index createIndexes whose indexes exist.
   */
  async ensureIndexes(): Promise<void> {
    await this.locks.createIndex({ ts: 1 }, { name: 'ts_1' });
    await this.locks.createIndex({ state: 1, process: 1 }, { name: 'state_1_process_1' });
    await this.pings.createIndex({ ping: 1 }, { name: 'ping_1' });
  }

  /** Upsert on `{_id, state: 0}`: the new document, or null when busy (E11000: the upsert lost to a held lock). */
  async grabLock(acquisition: Acquisition): Promise<LockDocument | null> {
    return this.mutate(acquisition.key, async () => {
      try {
        return await this.findAndModify(acquisition.key, { _id: acquisition.key, state: UNLOCKED }, this.acquire(acquisition), {
          upsert: true,
          returnDocument: 'after',
        });
      } catch (error) {
        if (isDuplicateKey(error)) return null;
        throw error;
      }
    });
  }

  /** Takes a lock that is free or still held by `currentHolderTs`; null when it changed meanwhile. */
  async overtakeLock(acquisition: Acquisition, currentHolderTs: ObjectId): Promise<LockDocument | null> {
    const { key } = acquisition;
    return this.mutate(key, () =>
      this.findAndModify(key, { $or: [{ _id: key, state: UNLOCKED }, { _id: key, ts: currentHolderTs }] }, this.acquire(acquisition), {
        returnDocument: 'after',
      }),
    );
  }

  /** Frees the lock if `ts` still holds it; true if it did. No match is success (idempotent). */
  async unlock(key: string, ts: ObjectId): Promise<boolean> {
    return this.mutate(key, async () => {
      const before = await this.findAndModify(key, { _id: key, ts }, { $set: { state: UNLOCKED } }, { returnDocument: 'before' });
      return before?.state === LOCKED;
    });
  }

  /** Frees every lock of this process (shutdown). */
  async unlockAll(): Promise<void> {
    if (!this.latch) {
      await this.locks.updateMany({ process: this.processId }, { $set: { state: UNLOCKED } });
      return;
    }
    for (const held of await this.heldByProcess()) await this.unlock(held._id, held.ts);
  }

  /** Administrative: frees the key whoever holds it; true if it was held. The fence is kept. */
  async forceUnlock(key: string): Promise<boolean> {
    return this.mutate(key, async () => {
      const before = await this.findAndModify(key, { _id: key, state: LOCKED }, { $set: { state: UNLOCKED } }, { returnDocument: 'before' });
      return before !== null;
    });
  }

  /** Holdfast's extend: sets a new lease on a lock `ts` still holds; false when it no longer does. */
  async extend(key: string, ts: ObjectId, lease: number): Promise<boolean> {
    return this.mutate(key, async () => {
      const after = await this.findAndModify(
        key,
        { _id: key, ts, state: LOCKED },
        { $set: { lease }, $currentDate: { extended: true } },
        { returnDocument: 'after' },
      );
      return after !== null;
    });
  }

  getLockByName(key: string): Promise<LockDocument | null> {
    return this.locks.findOne({ _id: key });
  }

  /** The locks this process holds according to the server: the holder's check, one query for all. */
  heldByProcess(): Promise<{ _id: string; ts: ObjectId }[]> {
    return this.locks
      .find({ process: this.processId, state: LOCKED }, { projection: { _id: 1, ts: 1 }, batchSize: 10_000 })
      .toArray() as Promise<{ _id: string; ts: ObjectId }[]>;
  }

  async ping(): Promise<void> {
    const ping = () => this.pings.findOneAndUpdate({ _id: this.processId }, { $currentDate: { ping: true } }, { upsert: true });
    await (this.latch ? whileSqliteBusy(ping) : ping());
  }

  async getPing(processId: string): Promise<Date | null> {
    return (await this.pings.findOne({ _id: processId }))?.ping ?? null;
  }

  /** Shutdown: the ping document goes away with the process. */
  async stopPing(): Promise<void> {
    await this.pings.deleteOne({ _id: this.processId });
  }

  private acquire(acquisition: Acquisition): UpdateFilter<LockDocument> {
    const { ts, who, why, lease, renew } = acquisition;
    return {
      $set: { ts, state: LOCKED as typeof LOCKED, who, process: this.processId, when: new Date(), why, lease, renew },
      $unset: { extended: '' as const },
      $inc: { fence: 1 },
    };
  }

  /** MongoDB's findAndModify; on a latched server, evaluated by `_id` (see id-pushdown.ts). */
  private findAndModify(
    key: string,
    filter: Filter<LockDocument>,
    update: UpdateFilter<LockDocument>,
    options: FindOneAndUpdateOptions & { returnDocument: 'before' | 'after' },
  ): Promise<LockDocument | null> {
    if (this.latch) return findAndModifyById(this.locks, key, filter, update, options);
    return this.locks.findOneAndUpdate(filter, update, options);
  }

  private mutate<T>(key: string, mutation: () => Promise<T>): Promise<T> {
    return this.latch ? this.latch.run(key, mutation) : mutation();
  }
}
