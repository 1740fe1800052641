import type { ObjectId } from 'mongodb';
import { allowManyListeners, type Bound } from './bounded.js';
import type { LockCatalog } from './lock-catalog.js';

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

  /** One pass over the queue; an entry stays queued (and counted) until its unlock succeeds. */
  async drain(catalog: LockCatalog, bound: Bound): Promise<void> {
    allowManyListeners(bound);
    for (const entry of [...this.pending]) {
      try {
        await catalog.unlock(entry, bound);
        const at = this.pending.indexOf(entry);
        if (at >= 0) this.pending.splice(at, 1);
      } catch {
        // Stays queued for the next pass.
      }
    }
  }
}
