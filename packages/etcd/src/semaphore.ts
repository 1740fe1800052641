import { LockConflictError, type LockInfo } from '@holdfast/core';
import { busy, type CallContext, type GrantOutcome, granted, type SlotRequest } from '@holdfast/core/backend';
import { NESTED_SLACK, oldestContenders, oldestFirst } from './contenders.js';
import type { EtcdContext, EtcdWake } from './context.js';
import { limitOf, lockInfoOf } from './entry.js';
import { join } from './join.js';
import { deleteIfCreatedAt, range } from './kv.js';
import { EtcdGrant } from './mutex/grant.js';
import { modeOf } from './read-write/modes.js';

/**
 * A semaphore of `limit` slots is the lock's protocol with the `limit` oldest contenders holding
 * (etcd has no semaphore recipe of its own; this is the mutex's, widened). Every entry states the
 * limit, so a key used with another limit, or as a plain lock, is refused.
 *
 * The token is the revision of the write that granted the slot, not the entry's create revision:
 * two waiters can reach a slot in either order (the third and fourth contenders of 2 slots both
 * move up when the first two leave), so create revisions would not grow in the order of grants,
 * whereas each attempt's write has a revision above every grant made before it.
 */
export async function tryGrantSlot(ctx: EtcdContext, request: SlotRequest, call: CallContext): Promise<GrantOutcome<EtcdWake>> {
  const { signal } = call;
  const { limit } = request;
  const joined = await join(ctx, request, limit, limit, signal);
  const { entry, revision, oldest } = joined;
  const other = oldest.find((kv) => limitOf(kv) !== limit);
  if (other) {
    await deleteIfCreatedAt(ctx.rpc, entry.key, entry.create_revision, signal);
    const used = limitOf(other);
    const use = modeOf(other) !== undefined ? 'a read-write lock' : used === undefined ? 'a plain lock' : `a semaphore of ${used} slots`;
    throw new LockConflictError(request.key, `the key is ${use}`);
  }
  if (oldest.some((kv) => kv.create_revision === entry.create_revision)) {
    return granted(await EtcdGrant.start(ctx, request, joined, BigInt(entry.mod_revision), signal));
  }
  if (!request.place) {
    await deleteIfCreatedAt(ctx.rpc, entry.key, entry.create_revision, signal);
    return busy({ revision });
  }
  // Any older contender leaving may free a slot for this one: the wait watches the directory.
  return busy({ revision, entry: { key: entry.key, createRevision: entry.create_revision } });
}

/** The `limit` oldest contenders hold the slots: the semaphore's holders, oldest first ([] for a plain lock's key). */
export async function slotHolders(ctx: EtcdContext, key: string, signal: AbortSignal): Promise<LockInfo[]> {
  const dir = ctx.layout.dir(key);
  const first = await range(ctx.rpc, oldestFirst(dir, 1 + NESTED_SLACK), signal);
  const head = (await oldestContenders(ctx, dir, first, 1, signal))[0];
  if (!head) return [];
  const limit = limitOf(head);
  // Held as a plain lock or a read-write lock (its slots lapsed, or it never was a semaphore): no slot is held.
  if (limit === undefined || modeOf(head) !== undefined) return [];
  const page = limit === 1 ? first : await range(ctx.rpc, oldestFirst(dir, limit + NESTED_SLACK), signal);
  const holders = await oldestContenders(ctx, dir, page, limit, signal);
  return holders.map((kv) => lockInfoOf(key, kv, 'mod'));
}
