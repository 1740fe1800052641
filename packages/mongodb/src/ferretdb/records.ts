import type { ObjectId } from 'mongodb';
import type { LockDocument } from '../documents.js';

/**
 * One immutable version of a key's lock document in `<locks>.versions`, `_id` = `<version>:<key>`
 * (see version-chain.ts). Version 1 is the first one the adapter wrote for that key.
 */
export interface VersionRecord extends Omit<LockDocument, '_id'> {
  _id: string;
  key: string;
  version: number;
}

/** A lock document's fields without its identity: what a new version records. */
export type LockFields = Omit<LockDocument, '_id' | 'version' | 'commit'>;

export function recordId(key: string, version: number): string {
  return `${version}:${key}`;
}

/** The record as the key's lock document (`_id` = the key), as callers and mirrors see it. */
export function toLock(record: VersionRecord): LockDocument {
  const { _id, key, ...fields } = record;
  return { ...fields, _id: key };
}

/** The same commit (records written before commit ids existed match on version and ts). */
export function sameCommit(
  a: { version?: number; ts: ObjectId; commit?: ObjectId },
  b: { version?: number; ts: ObjectId; commit?: ObjectId },
): boolean {
  if (a.commit || b.commit) return a.commit !== undefined && b.commit !== undefined && a.commit.equals(b.commit);
  return a.version === b.version && a.ts.equals(b.ts);
}
