import { randomBytes } from 'node:crypto';
import type { Collection } from 'mongodb';
import { sleep } from '@holdfast/core/backend';
import { isDuplicateKey, isSqliteBusy } from './driver-errors.js';
import type { LatchDocument } from './documents.js';

/** How long a latch may be seen unchanged before it is taken to belong to a crashed process. */
const STALE_AFTER_MS = 5_000;
const SPIN_MS = 3;
/** How long to keep resending a command that failed with SQLITE_BUSY. */
const BUSY_RETRY_MS = 5_000;

/**
 * Serializes the writes to one lock document, for servers whose findAndModify is not atomic.
 * FerretDB v1 evaluates the filter, then rewrites the document by `_id` without re-checking it, so two
 * racing grabs of a free lock both "win". Inserting a document with a unique `_id` is atomic there,
 * so every mutation of key K first inserts latch K, runs MongoDB's command, then deletes the latch.
 * Real MongoDB never needs this: the adapter runs the commands bare there.
 */
export class MutationLatch {
  /** SQLite has one writer at a time: more concurrent mutations per process only add SQLITE_BUSY retries. */
  private readonly slots = new Semaphore(2);

  constructor(private readonly latches: Collection<LatchDocument>) {}

  async run<T>(key: string, mutation: () => Promise<T>): Promise<T> {
    await this.slots.take();
    try {
      const nonce = await this.enter(key);
      try {
        return await whileSqliteBusy(mutation);
      } finally {
        await whileSqliteBusy(() => this.latches.deleteOne({ _id: key, nonce })).catch(() => undefined);
      }
    } finally {
      this.slots.give();
    }
  }

  private async enter(key: string): Promise<string> {
    const nonce = randomBytes(8).toString('hex');
    let blocker: { nonce: string; since: number } | undefined;
    for (;;) {
      try {
        await whileSqliteBusy(() => this.latches.insertOne({ _id: key, nonce, at: new Date() }));
        return nonce;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const current = await this.latches.findOne({ _id: key });
      if (current && current.nonce === blocker?.nonce) {
        // Held unchanged for this long by one mutation: its process died between insert and delete.
        if (Date.now() - blocker.since >= STALE_AFTER_MS) await this.latches.deleteOne({ _id: key, nonce: current.nonce });
      } else {
        blocker = current ? { nonce: current.nonce, since: Date.now() } : undefined;
      }
      await sleep(SPIN_MS);
    }
  }
}

/** Resends a command FerretDB refused with SQLITE_BUSY (rolled back, so nothing was applied). */
export async function whileSqliteBusy<T>(command: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + BUSY_RETRY_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await command();
    } catch (error) {
      if (!isSqliteBusy(error) || Date.now() > deadline) throw error;
      await sleep(Math.random() * Math.min(SPIN_MS * 2 ** attempt, 100));
    }
  }
}

class Semaphore {
  private readonly queue: (() => void)[] = [];

  constructor(private free: number) {}

  take(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.queue.push(resolve));
  }

  give(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.free++;
  }
}
