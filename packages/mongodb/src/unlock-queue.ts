import type { ObjectId } from 'mongodb';
import type { DistLockCatalog } from './catalog.js';

interface PendingUnlock {
  readonly key: string;
  readonly ts: ObjectId;
}

/**
 * Unlocks that failed or whose outcome is unknown, retried by the pinger until they succeed
 * (MongoDB's `_unlockList`): a lock never stays LOCKED because one unlock failed. Unlock by ts only
 * ever frees that one acquisition, so a late retry cannot free a newer holder.
 */
export class UnlockQueue {
  private pending: PendingUnlock[] = [];

  add(key: string, ts: ObjectId): void {
    this.pending.push({ key, ts });
  }

  get size(): number {
    return this.pending.length;
  }

  /** One pass over the queue; failures are queued again for the next pass. */
  async drain(catalog: DistLockCatalog): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    for (const entry of batch) {
      try {
        await catalog.unlock(entry.key, entry.ts);
      } catch {
        this.pending.push(entry);
      }
    }
  }
}
