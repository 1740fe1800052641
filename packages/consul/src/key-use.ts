import { LockConflictError } from '@holdfast/core';
import { READ_WRITE_FLAG } from './constants.js';
import type { ConsulHttp } from './consul-http.js';
import { isLockEntry, readKey, type TxnKvOp } from './kv.js';
import { readSemaphore, type SemaphorePlace } from './semaphore-record.js';

/*
 * A key is either a lock or a semaphore. Key "k" as a lock is `<prefix>/k`; as a semaphore it is the
 * directory `<prefix>/k/` with its coordination key `<prefix>/k/.lock`. Each acquire carries, in its
 * own transaction, a guard on the other use's key, so that a lock and a slot of one key can never be
 * granted at once, however they race. The guard starts optimistic (the other key absent, as it is
 * whenever the other use left nothing behind); when it fails, the other key is read and the guard is
 * rebuilt on what was seen, or the attempt is a LockConflictError.
 */

/** The lock's first guard: no semaphore record for the key. */
export function noSemaphore(place: SemaphorePlace): TxnKvOp[] {
  return [{ Verb: 'check-not-exists', Key: place.coordinationKey }];
}

/**
 * The lock's guard after the first failed: a semaphore with live holders is a conflict; a record whose
 * holders are all dead is deleted in the lock's transaction (Go's Semaphore.Destroy); a coordination
 * key that is no semaphore's (`consul lock <prefix>/k`, a Holdfast lock on "k/.lock") is another key.
 */
export async function semaphoreGuard(http: ConsulHttp, semaphore: SemaphorePlace, signal: AbortSignal): Promise<TxnKvOp[]> {
  // The same coordination key serves a read-write lock (read-write.ts), under its own flags.
  const seen = await readSemaphore(http, semaphore, signal, false);
  const readWrite = seen.entry?.Flags === READ_WRITE_FLAG;
  const place = readWrite ? { ...semaphore, flag: READ_WRITE_FLAG } : semaphore;
  const state = readWrite ? await readSemaphore(http, place, signal, false) : seen;
  if (!state.entry) return noSemaphore(place);
  if (state.problem !== undefined) return [];
  if (state.holders.length > 0) {
    const use = readWrite
      ? `a read-write lock (${state.holders.length} holders)`
      : `a semaphore (${state.holders.length} of ${state.limit} slots held)`;
    throw new LockConflictError(place.key, `it is in use as ${use}`);
  }
  return [{ Verb: 'delete-cas', Key: place.coordinationKey, Index: state.entry.ModifyIndex }];
}

/** A slot's first guard: no plain lock entry for the key. */
export function noLock(place: SemaphorePlace): TxnKvOp[] {
  return [{ Verb: 'check-not-exists', Key: place.lockKey }];
}

/**
 * A slot's guard after the first failed: a lock held by a session is a conflict. A lock entry that no
 * session holds (left by the Go client's Unlock, or by an invalidated session) is taken and deleted in
 * the slot's transaction: taking it with the slot's session honours a lock-delay still in force (the
 * transaction is then refused "due to lock delay"). Another kind of entry is not a lock: no guard.
 */
export async function lockGuard(http: ConsulHttp, place: SemaphorePlace, session: string, signal: AbortSignal): Promise<TxnKvOp[]> {
  const { entry } = await readKey(http, place.lockKey, false, signal);
  if (!entry) return noLock(place);
  if (!isLockEntry(entry)) return [];
  if (entry.Session) {
    const use = place.flag === READ_WRITE_FLAG ? 'a read-write lock' : 'a semaphore';
    throw new LockConflictError(place.key, `it is held as a plain lock, not ${use}`);
  }
  return [
    { Verb: 'check-index', Key: place.lockKey, Index: entry.ModifyIndex },
    { Verb: 'lock', Key: place.lockKey, Session: session, Flags: entry.Flags },
    { Verb: 'delete', Key: place.lockKey },
  ];
}
