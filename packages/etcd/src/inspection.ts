import { LockConflictError, type LockInfo } from '@holdfast/core';
import { NESTED_SLACK, oldestContenders, oldestFirst } from './contenders.js';
import type { EtcdContext } from './context.js';
import { limitOf, lockInfoOf } from './entry.js';
import { deleteIfCreatedAt, type KeyValue, prefixEnd, range } from './kv.js';
import { forceReleaseModes } from './read-write/holders.js';
import { modeOf } from './read-write/modes.js';

/** Entries read per page when listing (one Range each, in key order). */
export const LIST_PAGE = 1000;

/** The oldest contender of the key (its holder), or null when there is none. */
async function headOf(ctx: EtcdContext, key: string, signal: AbortSignal): Promise<KeyValue | null> {
  const dir = ctx.layout.dir(key);
  const first = await range(ctx.rpc, oldestFirst(dir, 1 + NESTED_SLACK), signal);
  return (await oldestContenders(ctx, dir, first, 1, signal))[0] ?? null;
}

/**
 * The key's holder (its oldest contender); a semaphore's key is refused, as a lock on it would be;
 * a read-write lock's key shows no plain lock (its holders come from modeHolders).
 */
export async function inspectKey(ctx: EtcdContext, key: string, signal: AbortSignal): Promise<LockInfo | null> {
  const head = await headOf(ctx, key, signal);
  if (!head || modeOf(head) !== undefined) return null;
  const limit = limitOf(head);
  if (limit !== undefined) throw new LockConflictError(key, `the key is a semaphore of ${limit} slots`);
  return lockInfoOf(key, head);
}

/**
 * Every held lock whose key starts with `keyPrefix` (a plain string prefix), sorted by key: the
 * oldest entry of each key directory, read page by page in key order. Queued contenders and
 * semaphore slots and read-write holders are not listed; entries vanish with their lease, so nothing expired is shown.
 */
export async function listLocks(ctx: EtcdContext, keyPrefix: string, signal: AbortSignal): Promise<LockInfo[]> {
  const start = ctx.layout.listStart(keyPrefix);
  const end = prefixEnd(start);
  const oldest = new Map<string, KeyValue>();
  let from = start;
  for (;;) {
    const page = await range(ctx.rpc, { key: from, range_end: end, limit: LIST_PAGE, sort_order: 'ASCEND', sort_target: 'KEY' }, signal);
    for (const kv of page.kvs) {
      const key = ctx.layout.keyOf(kv.key);
      if (key === null || !key.startsWith(keyPrefix)) continue;
      const seen = oldest.get(key);
      if (!seen || BigInt(kv.create_revision) < BigInt(seen.create_revision)) oldest.set(key, kv);
    }
    if (!page.more || page.kvs.length === 0) break;
    from = Buffer.concat([page.kvs[page.kvs.length - 1]!.key, Buffer.from([0])]);
  }
  return [...oldest.entries()]
    .filter(([, kv]) => limitOf(kv) === undefined && modeOf(kv) === undefined)
    .map(([key, kv]) => lockInfoOf(key, kv))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * Deletes the key's holder whoever it is (its watch tells a Holdfast holder at once; etcdctl's
 * session notices nothing, as with `etcdctl del`), or every held slot of a semaphore, or every
 * holder of a read-write lock (its readers, or its writer). The next
 * contender in line then holds the key.
 */
export async function forceRelease(ctx: EtcdContext, key: string, signal: AbortSignal): Promise<boolean> {
  const head = await headOf(ctx, key, signal);
  if (!head) return false;
  if (modeOf(head) !== undefined) return forceReleaseModes(ctx, key, signal);
  const limit = limitOf(head);
  if (limit === undefined) return deleteIfCreatedAt(ctx.rpc, head.key, head.create_revision, signal);
  const dir = ctx.layout.dir(key);
  const holders = await oldestContenders(ctx, dir, await range(ctx.rpc, oldestFirst(dir, limit + NESTED_SLACK), signal), limit, signal);
  const freed = await Promise.all(holders.map((kv) => deleteIfCreatedAt(ctx.rpc, kv.key, kv.create_revision, signal)));
  return freed.some(Boolean);
}
