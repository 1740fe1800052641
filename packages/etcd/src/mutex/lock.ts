import { LockConflictError } from '@holdfast/core';
import { busy, type CallContext, type GrantOutcome, type GrantRequest, granted } from '@holdfast/core/backend';
import { predecessorOf } from '../contenders.js';
import type { EtcdContext, EtcdWake } from '../context.js';
import { limitOf } from '../entry.js';
import { join } from '../join.js';
import { deleteIfCreatedAt } from '../kv.js';
import { modeOf } from '../read-write/modes.js';
import { EtcdGrant } from './grant.js';

/**
 * One attempt at a lock, as mutex.go's TryLock (no place) and one round of Lock (with a place):
 * the contender with the lowest create revision holds the key. A single attempt that is not the
 * oldest deletes its entry again; a waiting acquire's entry stays, as its place in line, and the
 * wait that follows watches only the entry just before it (waiting.ts).
 */
export async function tryGrantLock(ctx: EtcdContext, request: GrantRequest, call: CallContext): Promise<GrantOutcome<EtcdWake>> {
  const { signal } = call;
  const joined = await join(ctx, request, 1, undefined, signal);
  const { entry, dir, revision, oldest } = joined;
  const head = oldest[0];
  if (head && limitOf(head) !== undefined) {
    await deleteIfCreatedAt(ctx.rpc, entry.key, entry.create_revision, signal);
    throw new LockConflictError(request.key, `the key is a semaphore of ${limitOf(head)} slots`);
  }
  if (head && modeOf(head) !== undefined) {
    await deleteIfCreatedAt(ctx.rpc, entry.key, entry.create_revision, signal);
    throw new LockConflictError(request.key, 'the key is a read-write lock');
  }
  if (!head || head.create_revision === entry.create_revision) {
    // The fencing token is the entry's create revision: strictly increasing cluster-wide, and the
    // order in which contenders hold the key.
    return granted(await EtcdGrant.start(ctx, request, joined, BigInt(entry.create_revision), signal));
  }
  if (!request.place) {
    await deleteIfCreatedAt(ctx.rpc, entry.key, entry.create_revision, signal);
    return busy({ revision });
  }
  const predecessor = await predecessorOf(ctx, dir, entry.create_revision, signal);
  const place = { key: entry.key, createRevision: entry.create_revision };
  return busy(predecessor ? { revision, predecessor: predecessor.key, entry: place } : { revision, retryNow: true, entry: place });
}
