import type { Collection, ObjectId } from 'mongodb';
import type { Bound } from './bounded.js';
import type { LockDocument } from './documents.js';

/** The fields one acquisition writes (MongoDB's grabLock / overtakeLock `$set`, plus Holdfast's). */
export interface Acquisition {
  readonly key: string;
  readonly ts: ObjectId;
  /** The attempt's lockId: abandon(request) frees what a lost reply granted by it. */
  readonly lockId: string;
  readonly who: string;
  readonly why: string;
  readonly lease: number;
  readonly renew: boolean;
}

/** One acquisition as this process believes it holds it; `granted` is the document its grab returned. */
export interface HeldAcquisition {
  readonly key: string;
  readonly ts: ObjectId;
  /** On FerretDB also when the read it was based on began (monotonic ms): a release soon after may skip reading. */
  readonly granted?: (LockDocument & { readonly readStartedAt?: number }) | undefined;
}

/**
 * The lock commands of MongoDB's DistLockCatalog. Two implementations: `DistLockCatalog` (mongod-catalog.ts: mongod,
 * whose findAndModify evaluates its filter atomically with the write) and `VersionedCatalog`
 * (ferretdb/: FerretDB, where only a unique insert is atomic). Every lock document returned is the truth for
 * that key at that moment, with `_id` = the key.
 */
export interface LockCatalog {
  /** The MongoDB-shaped lock documents (`_id` = key): what change streams, tools and `find` see. */
  readonly locks: Collection<LockDocument>;
  ensureIndexes(bound: Bound): Promise<void>;
  /** Takes a free lock: the new document, or null when busy. */
  grabLock(acquisition: Acquisition, bound: Bound): Promise<LockDocument | null>;
  /** Takes a lock that is free or still held by `currentHolderTs`; null when it changed meanwhile. */
  overtakeLock(acquisition: Acquisition, currentHolderTs: ObjectId, bound: Bound): Promise<LockDocument | null>;
  /** Frees the lock if `held.ts` still holds it; true if it did. No match is success (idempotent). */
  unlock(held: HeldAcquisition, bound: Bound): Promise<boolean>;
  /** Frees every lock of this process (shutdown). */
  unlockAll(bound: Bound): Promise<void>;
  /** Administrative: frees the key whoever holds it; true if it was held. The fence is kept. */
  forceUnlock(key: string, bound: Bound): Promise<boolean>;
  /** Sets a new lease on a lock `held.ts` still holds; false when it no longer does. */
  extend(held: HeldAcquisition, lease: number, bound: Bound): Promise<boolean>;
  getLockByName(key: string, bound: Bound): Promise<LockDocument | null>;
  /** The current document of every locked key starting with `prefix` ('' = all), in any order. */
  lockedUnder(prefix: string, bound: Bound): Promise<LockDocument[]>;
  /** The locks the server's lock documents show held by this process (on FerretDB: the mirrors). */
  heldByProcess(bound: Bound): Promise<{ _id: string; ts: ObjectId }[]>;
  /** The holder's check: which of these acquisitions the server still shows as held. */
  stillHeld(held: readonly HeldAcquisition[], bound: Bound): Promise<{ _id: string; ts: ObjectId }[]>;
  /**
   * The documents of these keys as they stand, for waiters watching for a change: cheap reads by
   * `_id` (mongod: one query; FerretDB: the version record after the one last seen, so a release shows
   * once inserted; `seen`, the watch's last view of each key, is where that read may start).
   */
  watchedDocuments(
    keys: readonly string[],
    bound: Bound,
    seen?: ReadonlyMap<string, LockDocument | null>,
  ): Promise<Map<string, LockDocument>>;
  /** Background upkeep the pinger runs every second (FerretDB: deleting superseded version records). */
  housekeeping?(bound: Bound): Promise<void>;
}
