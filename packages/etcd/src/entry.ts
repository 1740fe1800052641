import type { LockInfo } from '@holdfast/core';
import type { KeyValue } from './kv.js';
import { leaseHex } from './layout.js';

/** What a Holdfast contender writes as its entry's value (etcdctl writes an empty one). */
export interface EntryValue {
  readonly owner: string;
  readonly reason?: string;
  /** The attempt that wrote it: abandon() frees only what that attempt created or refreshed. */
  readonly lockId: string;
  /** Semaphores: the slot count; absent on a plain lock. */
  readonly limit?: number;
  /** A slot whose entry was rewritten after its grant: the token of the grant. */
  readonly token?: string;
  /** When the attempt wrote it (epoch ms): the grant's acquiredAt. */
  readonly at: number;
  /** Locks without auto-renewal: the lease end the holder was told (epoch ms). */
  readonly until?: number;
}

export function encodeEntry(value: EntryValue): Buffer {
  return Buffer.from(JSON.stringify(value));
}

/** The Holdfast value of an entry, or null for another client's (etcdctl's empty value). */
export function decodeEntry(kv: KeyValue): EntryValue | null {
  if (kv.value.length === 0) return null;
  try {
    const value = JSON.parse(kv.value.toString()) as Partial<EntryValue>;
    return typeof value.owner === 'string' && typeof value.lockId === 'string' && typeof value.at === 'number'
      ? (value as EntryValue)
      : null;
  } catch {
    return null;
  }
}

/**
 * A holder as inspect()/list()/slotHolders() report it; a foreign holder is named by its lease. A
 * lock's token is its entry's create revision, a slot's the revision of the write that granted it
 * (semaphore.ts says why).
 */
export function lockInfoOf(key: string, kv: KeyValue, token: 'create' | 'mod' = 'create'): LockInfo {
  const value = decodeEntry(kv);
  const lease = leaseHex(kv.lease);
  return {
    key,
    owner: value?.owner ?? `etcd lease ${lease}`,
    reason: value?.reason,
    acquiredAt: new Date(value?.at ?? Date.now()),
    expiresAt: value?.until === undefined ? null : new Date(value.until),
    token: BigInt(token === 'create' ? kv.create_revision : (value?.token ?? kv.mod_revision)),
    details: { etcdKey: kv.key.toString(), lease, createRevision: kv.create_revision, modRevision: kv.mod_revision },
  };
}

/** The slot count an entry declares: undefined for a plain lock (and for etcdctl's entries). */
export function limitOf(kv: KeyValue): number | undefined {
  return decodeEntry(kv)?.limit;
}
