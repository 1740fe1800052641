import type { ObjectId } from 'mongodb';
import type { GrantRequest } from '@holdfast/core/backend';
import type { LockDocument } from './documents.js';

/** One acquisition this provider instance holds. */
export interface HeldGrant {
  readonly request: GrantRequest;
  readonly ts: ObjectId;
  /** The lock document the grab returned (on FerretDB, its version says where to look for changes). */
  readonly granted: LockDocument;
  /** Local time the grant request was sent: a contender cannot have seen the lock earlier. */
  readonly sentAt: number;
  /** Local time the grant was confirmed: holder checks sent earlier cannot know about it. */
  readonly grantedAt: number;
  lease: number;
}

/** The acquisitions this instance holds, by lockId, and the holder-side loss rules. */
export class HeldGrants {
  private readonly byLockId = new Map<string, HeldGrant>();

  add(grant: HeldGrant): void {
    this.byLockId.set(grant.request.lockId, grant);
  }

  get(lockId: string): HeldGrant | undefined {
    return this.byLockId.get(lockId);
  }

  remove(lockId: string): HeldGrant | undefined {
    const grant = this.byLockId.get(lockId);
    this.byLockId.delete(lockId);
    return grant;
  }

  get size(): number {
    return this.byLockId.size;
  }

  all(): HeldGrant[] {
    return [...this.byLockId.values()];
  }

  /** The acquisitions as the catalog's holder check takes them. */
  acquisitions(): { key: string; ts: ObjectId; granted: LockDocument }[] {
    return this.all().map((grant) => ({ key: grant.request.key, ts: grant.ts, granted: grant.granted }));
  }

  holds(ts: ObjectId): boolean {
    return this.all().some((grant) => grant.ts.equals(ts));
  }

  /** Declares lost every grant for which `isGone` holds, forgets it and returns it. */
  loseWhere(isGone: (grant: HeldGrant) => boolean, detail: string, cause?: unknown): HeldGrant[] {
    const lost = this.all().filter(isGone);
    for (const grant of lost) {
      this.byLockId.delete(grant.request.lockId);
      grant.request.onLost(detail, cause);
    }
    return lost;
  }

  /**
   * The holder's check: every grant confirmed before the server listed this process's locks must be
   * on that list with its own ts, or it was taken over or force-released.
   */
  verify(onServer: readonly { _id: string; ts: ObjectId }[], listedAt: number): void {
    const held = new Set(onServer.map((lock) => `${lock.ts.toHexString()}\u0000${lock._id}`));
    this.loseWhere(
      (grant) => grant.grantedAt < listedAt && !held.has(`${grant.ts.toHexString()}\u0000${grant.request.key}`),
      'the lock document no longer carries this acquisition (taken over or force-released)',
    );
  }
}
