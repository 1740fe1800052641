import type { LockDocument } from '../documents.js';

/** Keys remembered at most; the least recently updated go first. */
const CAPACITY = 10_000;

/** The latest version record a provider has seen of a key; with `readStartedAt` when it committed it itself. */
export interface KnownHead {
  readonly lock: LockDocument;
  /** Own commits only: when the read that this commit (and the chain of own commits before it) is based on began. */
  readonly readStartedAt?: number;
}

/**
 * FerretDB: the latest version of each key this provider has checked (its own commits and its
 * walks; never a waiter's unchecked watch read, see VersionChain.watch). A walk starts there
 * instead of at the mirror, which saves reading the mirror; the version-chain rules still decide
 * what is latest. Versions only move forward here.
 */
export class KnownHeads {
  private readonly byKey = new Map<string, KnownHead>();

  get(key: string): KnownHead | undefined {
    return this.byKey.get(key);
  }

  saw(lock: LockDocument, readStartedAt?: number): void {
    if (!lock.version || !lock.commit) return;
    const known = this.byKey.get(lock._id);
    if (known && (known.lock.version ?? 0) >= lock.version) return;
    this.byKey.delete(lock._id);
    this.byKey.set(lock._id, readStartedAt === undefined ? { lock } : { lock, readStartedAt });
    if (this.byKey.size > CAPACITY) this.byKey.delete(this.byKey.keys().next().value!);
  }
}
