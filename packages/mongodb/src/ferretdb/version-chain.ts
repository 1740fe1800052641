import { BackendError } from '@holdfast/core';
import { type Collection, type Db, ObjectId } from 'mongodb';
import { type Bound, throwIfAborted } from '../bounded.js';
import type { LockDocument } from '../documents.js';
import { isDuplicateKey } from '../driver-errors.js';
import { MAJORITY } from '../write-concern.js';
import { KnownHeads } from './known-heads.js';
import { Mirrors } from './mirrors.js';
import { PruneQueue } from './prune-queue.js';
import { type LockFields, recordId, sameCommit, toLock, type VersionRecord } from './records.js';
import { whileSqliteBusy } from './sqlite-busy.js';

/** A key's state as read, and when the read began (monotonic ms): what a commit is based on. */
export interface ChainRead {
  readonly current: LockDocument | null;
  readonly startedAt: number;
  /** The key had no mirror document: a commit creates it with an insert (no scan on FerretDB). */
  readonly unmirrored?: boolean;
}

/** How long a commit may take from the read it is based on to its reply, and how long superseded records are kept. */
export interface ChainTiming {
  readonly actWindowMs: number;
  /** Must exceed actWindowMs: see the argument on VersionChain. */
  readonly pruneDelayMs: number;
}

export const CHAIN_TIMING: ChainTiming = { actWindowMs: 5_000, pruneDelayMs: 10_000 };

/** Versions a walk from a known head reads past it before it asks the mirror instead. */
const KNOWN_WALK = 4;

/**
 * Each key's lock states on FerretDB as immutable version records `<version>:<key>` in
 * `<locks>.versions`, each with a `commit` id of its own. FerretDB v1 evaluates no filter atomically
 * with its write; the one atomic check it has is a unique `_id` on insert. So every change is the
 * insert of version n + 1 computed from version n: of all writers that read n as the latest,
 * exactly one can insert n + 1. The `locks` document of the key mirrors a recent version and says
 * where the walk to the latest starts. Every read is by exact `_id`, the only filter FerretDB v1
 * pushes down to SQLite (and even that is a scan there, so superseded records are pruned).
 *
 * Why pruning never lets a write grant a lock twice:
 * 1. Prune: after committing version v, the committer deletes the key's records below v, `pruneDelayMs`
 *    later, one by one in ascending order, and only when the key's mirror exists. The highest
 *    version is never deleted, and a record is only deleted after every lower one it saw.
 * 2. A deleted id `w:<key>` can be inserted again by a delayed write. That writer read w - 1 as the
 *    latest before w was first committed, so before the prune's commit, so more than `pruneDelayMs`
 *    before its insert lands. A commit whose reply comes within `actWindowMs` < `pruneDelayMs` of the
 *    start of its read (durations on each process's monotonic clock) can therefore not be such a
 *    record; a later one is acted on (reported, mirrored) only if a query of the key's records shows
 *    it as the highest version, which a re-inserted id never is (a higher version exists, rule 1);
 *    otherwise it fails as unknown. So such a record is never acted on.
 * 3. Walks: from the mirror's version m, read m + 1, m + 2, ... up to a missing one, then read m
 *    again: still there with the mirror's commit id, it was deleted by no prune so far, so neither
 *    was anything above it (rule 1), and the walk saw every version up to the latest. Otherwise
 *    (pruned, or re-inserted by a late write with another commit id) the latest is found by a query
 *    of all the key's records (a highest version always exists and is never a re-inserted one).
 *    A walk may start at the latest version this provider has seen instead of the mirror's: the
 *    same reads in the same order, the same argument.
 * 4. A commit may be based on this provider's own last commit of the key instead of a read: every
 *    later version was committed after that insert, so after the read it was based on began, and
 *    rule 2 holds with that read's start (the act window counts from it).
 * Every provider of a collection must follow these rules: stop older adapter versions before starting this one.
 */
export class VersionChain {
  readonly mirrors: Mirrors;
  readonly records: Collection<VersionRecord>;
  readonly prunes: PruneQueue;
  private readonly known = new KnownHeads();

  constructor(
    db: Db,
    locksCollection: string,
    private readonly timing: ChainTiming = CHAIN_TIMING,
  ) {
    this.mirrors = new Mirrors(db, locksCollection);
    this.records = db.collection<VersionRecord>(`${locksCollection}.versions`, MAJORITY);
    this.prunes = new PruneQueue(this, timing.pruneDelayMs);
  }

  async head(key: string, bound: Bound): Promise<ChainRead> {
    const startedAt = performance.now();
    const known = this.known.get(key)?.lock;
    const fromKnown = known && (await this.walkFromKnown(known, bound));
    if (fromKnown) return { current: fromKnown, startedAt };
    const mirror = await this.mirrors.read(key, bound);
    const current = await this.headFrom(key, mirror, bound);
    if (current) this.known.saw(current);
    return { current, startedAt, unmirrored: mirror === null };
  }

  /**
   * This provider's own last commit of the key as the read a commit may be based on (rule 4), while
   * it is young enough that the commit's reply can still come within the act window.
   */
  recentOwnCommit(key: string): ChainRead | undefined {
    const known = this.known.get(key);
    if (known?.readStartedAt === undefined || performance.now() - known.readStartedAt >= this.timing.actWindowMs / 2) return undefined;
    return { current: known.lock, startedAt: known.readStartedAt };
  }

  /**
   * For waiters watching the key, one read: the version after the later of the latest checked one
   * and `seen` (what the watch last saw of the key) if it exists, else that one; the mirror when
   * neither is known. A hint that something changed, never acted on and never remembered: a record
   * read here is unchecked (a late insert may have re-used a pruned version's id), so it must not
   * become a walk's start, which rule 3 needs to have been the latest once. `seen` is the watch's
   * own earlier hint, kept by the watch and only used to read the next version: the waiter's next
   * attempt still walks from the last checked head.
   */
  async watch(key: string, bound: Bound, seen?: LockDocument | null): Promise<LockDocument | null> {
    const known = this.known.get(key)?.lock;
    const base = seen?.version && (!known || seen.version > known.version!) ? seen : known;
    if (!base?.version) return this.mirrors.read(key, bound);
    const next = await this.read(key, base.version + 1, bound);
    return next ? toLock(next) : base;
  }

  /** Rule 3 from a known version: a few versions past it, the next one missing, then it still there; null when that fails. */
  private async walkFromKnown(known: LockDocument, bound: Bound): Promise<LockDocument | null> {
    const key = known._id;
    let latest: VersionRecord | null = null;
    for (let version = known.version! + 1; version <= known.version! + KNOWN_WALK; version++) {
      const next = await this.read(key, version, bound);
      if (next) {
        latest = next;
        continue;
      }
      const again = await this.read(key, known.version!, bound);
      if (!again || !sameCommit(again, known)) return null;
      const current = toLock(latest ?? again);
      this.known.saw(current);
      return current;
    }
    return null;
  }

  /** The latest version of the key, walking from its mirror (rule 3 above). */
  async headFrom(key: string, mirror: LockDocument | null, bound: Bound): Promise<LockDocument | null> {
    const start = mirror?.version ?? 0;
    let latest: LockDocument | null = null;
    for (let version = start + 1; ; version++) {
      const next = await this.read(key, version, bound);
      if (!next) break;
      latest = toLock(next);
    }
    if (start > 0) {
      const own = await this.read(key, start, bound);
      if (!own || !sameCommit(own, mirror!)) return this.mirrors.repaired(await this.latestByQuery(key, bound), mirror, bound);
      latest ??= toLock(own);
    }
    // A key without records is at version 0: its state is the mirror (a document written by MongoDB itself).
    return this.mirrors.repaired(latest ?? mirror, mirror, bound);
  }

  /**
   * Inserts the version after the one read; null when another writer inserted it first (whenever
   * that was). A reply later than the act window is an error: the record may have landed in a pruned
   * range, and nothing may be decided on it (rule 2 above).
   */
  async commit(key: string, read: ChainRead, fields: LockFields, bound: Bound): Promise<(LockDocument & { readStartedAt: number }) | null> {
    const version = (read.current?.version ?? 0) + 1;
    const record: VersionRecord = { ...fields, commit: new ObjectId(), _id: recordId(key, version), key, version };
    throwIfAborted(bound);
    try {
      await whileSqliteBusy(bound, () => this.records.insertOne(record));
    } catch (error) {
      if (isDuplicateKey(error)) return null;
      throw error;
    }
    if (performance.now() - read.startedAt > this.timing.actWindowMs) {
      // Late: the id may have been free again because it was pruned (rule 2). Only the highest version is certain.
      const latest = await this.latestByQuery(key, bound);
      if (!latest || !sameCommit(latest, record)) {
        throw new BackendError(
          'mongodb',
          `a version record confirmed ${this.timing.actWindowMs} ms or more after its read is not the latest`,
        );
      }
    }
    if (version > 1) this.prunes.add(key, version);
    const lock = toLock(record);
    this.known.saw(lock, read.startedAt);
    await this.mirrors.write(lock, bound, read.unmirrored);
    return { ...lock, readStartedAt: read.startedAt };
  }

  /**
   * Whether `own` (a version this process committed) is still the key's latest: the next version is
   * missing, and then `own` is still there (rule 3: read in that order).
   */
  async isLatest(own: LockDocument, bound: Bound): Promise<boolean> {
    if ((await this.read(own._id, own.version! + 1, bound)) !== null) return false;
    const again = await this.read(own._id, own.version!, bound);
    return again !== null && sameCommit(again, own);
  }

  /** Rewrites the lease of a record (only its holder ever does); the record after, or null if it is gone. */
  async setLease(lock: LockDocument, lease: number, bound: Bound): Promise<LockDocument | null> {
    throwIfAborted(bound);
    const updated = await whileSqliteBusy(bound, () =>
      this.records.findOneAndUpdate(
        { _id: recordId(lock._id, lock.version ?? 0) },
        { $set: { lease }, $currentDate: { extended: true } },
        { returnDocument: 'after' },
      ),
    );
    return updated && toLock(updated);
  }

  read(key: string, version: number, bound: Bound): Promise<VersionRecord | null> {
    return this.records.findOne({ _id: recordId(key, version) }, { signal: bound.signal });
  }

  /** The latest version of each key that has records, in one query (evaluated in Go on FerretDB). */
  async latestOf(keys: readonly string[], bound: Bound): Promise<Map<string, LockDocument>> {
    const latest = new Map<string, LockDocument>();
    for (const record of await this.records.find({ key: { $in: [...keys] } }, { signal: bound.signal }).toArray()) {
      if ((latest.get(record.key)?.version ?? 0) < record.version) latest.set(record.key, toLock(record));
    }
    return latest;
  }

  /** All records of the key, the highest wins: a scan on FerretDB, only when a walk cannot be trusted. */
  private async latestByQuery(key: string, bound: Bound): Promise<LockDocument | null> {
    const [latest] = await this.records.find({ key }, { sort: { version: -1 }, limit: 1, signal: bound.signal }).toArray();
    return latest ? toLock(latest) : null;
  }
}
