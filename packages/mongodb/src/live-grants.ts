import type { ObjectId } from 'mongodb';
import type { MongoGrant } from './mongo-grant.js';

/**
 * The grants this provider instance holds: what its pinger keeps alive, checks and, when they are
 * gone or its pings stopped for too long, declares lost. A grant leaves on release or loss.
 */
export class LiveGrants {
  /** By ts (hex), as the server's documents name them: the orphan sweep asks about thousands at once. */
  private readonly byTs = new Map<string, MongoGrant>();

  add(grant: MongoGrant): void {
    this.byTs.set(grant.ts.toHexString(), grant);
  }

  delete(grant: MongoGrant): boolean {
    const id = grant.ts.toHexString();
    return this.byTs.get(id) === grant && this.byTs.delete(id);
  }

  all(): MongoGrant[] {
    return [...this.byTs.values()];
  }

  holds(ts: ObjectId): boolean {
    return this.byTs.has(ts.toHexString());
  }

  /** Declares lost every grant for which `isGone` holds and returns them. */
  loseWhere(isGone: (grant: MongoGrant) => boolean, detail: string, cause?: unknown): MongoGrant[] {
    const lost = this.all().filter(isGone);
    for (const grant of lost) grant.lose(detail, cause);
    return lost;
  }

  /**
   * The holder's check: every grant confirmed before the server listed this process's locks must be
   * on that list with its own ts, or it was taken over or force-released.
   */
  verify(onServer: readonly { _id: string; ts: ObjectId }[], listedAt: number): void {
    const held = new Set(onServer.map((lock) => `${lock.ts.toHexString()}\u0000${lock._id}`));
    this.loseWhere(
      (grant) => grant.grantedAt < listedAt && !held.has(`${grant.ts.toHexString()}\u0000${grant.key}`),
      'the lock document no longer carries this acquisition (taken over or force-released)',
    );
  }
}
