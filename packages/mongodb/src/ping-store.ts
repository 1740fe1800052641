import type { Collection, Db } from 'mongodb';
import { type Bound, throwIfAborted } from './bounded.js';
import type { PingDocument } from './documents.js';
import { whileSqliteBusy } from './ferretdb/index.js';
import { MAJORITY } from './write-concern.js';

/** MongoDB's `config.lockpings`: one document per process, its last heartbeat. */
export class PingStore {
  readonly pings: Collection<PingDocument>;

  constructor(
    db: Db,
    collection: string,
    readonly processId: string,
  ) {
    this.pings = db.collection<PingDocument>(collection, MAJORITY);
  }

  ensureIndexes(bound: Bound): Promise<unknown> {
    throwIfAborted(bound);
    return this.pings.createIndex({ ping: 1 }, { name: 'ping_1' });
  }

  async ping(bound: Bound): Promise<void> {
    throwIfAborted(bound);
    await whileSqliteBusy(bound, () =>
      this.pings.findOneAndUpdate({ _id: this.processId }, { $currentDate: { ping: true } }, { upsert: true }),
    );
  }

  async getPing(processId: string, bound: Bound): Promise<Date | null> {
    return (await this.pings.findOne({ _id: processId }, { signal: bound.signal }))?.ping ?? null;
  }

  /** The last ping of each of these processes (absent: none). */
  async getPings(processIds: readonly string[], bound: Bound): Promise<Map<string, Date>> {
    if (processIds.length === 0) return new Map();
    const found = await this.pings.find({ _id: { $in: [...processIds] } }, { signal: bound.signal }).toArray();
    return new Map(found.map((ping) => [ping._id, ping.ping]));
  }

  /** Shutdown: the ping document goes away with the process. */
  async stopPing(bound: Bound): Promise<void> {
    throwIfAborted(bound);
    await this.pings.deleteOne({ _id: this.processId });
  }
}
