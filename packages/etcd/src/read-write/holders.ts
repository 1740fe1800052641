import type { LockInfo } from '@holdfast/core';
import { oldestFirst } from '../contenders.js';
import type { EtcdContext } from '../context.js';
import { lockInfoOf } from '../entry.js';
import { deleteIfCreatedAt, type KeyValue, range } from '../kv.js';
import { directEntries } from '../layout.js';
import { modeOf } from './modes.js';

/** Entries read per page while collecting a key's readers. */
const HOLDERS_PAGE = 100;

/**
 * The key's read-write holders, oldest first: the writer whose entry is the oldest, or the readers
 * older than the first entry that is not a reader's. [] while the oldest entry is not a read-write
 * contender's (a plain lock, a semaphore, etcdctl's lock).
 */
async function holderEntries(ctx: EtcdContext, key: string, signal: AbortSignal): Promise<KeyValue[]> {
  const dir = ctx.layout.dir(key);
  const held: KeyValue[] = [];
  let after: string | undefined;
  for (;;) {
    const request = oldestFirst(dir, HOLDERS_PAGE);
    const page = await range(ctx.rpc, after === undefined ? request : { ...request, min_create_revision: after }, signal);
    for (const kv of directEntries(dir, page.kvs)) {
      const mode = modeOf(kv);
      if (held.length === 0 && mode === 'exclusive') return [kv];
      if (mode !== 'shared') return held;
      held.push(kv);
    }
    if (!page.more || page.kvs.length === 0) return held;
    after = String(BigInt(page.kvs[page.kvs.length - 1]!.create_revision) + 1n);
  }
}

export async function modeHolders(ctx: EtcdContext, key: string, signal: AbortSignal): Promise<LockInfo[]> {
  return (await holderEntries(ctx, key, signal)).map((kv) => {
    const info = lockInfoOf(key, kv);
    return { ...info, details: { ...info.details, mode: modeOf(kv) } };
  });
}

/** Deletes every current read-write holder of the key (their watches tell them); false when none held it. */
export async function forceReleaseModes(ctx: EtcdContext, key: string, signal: AbortSignal): Promise<boolean> {
  const holders = await holderEntries(ctx, key, signal);
  const freed = await Promise.all(holders.map((kv) => deleteIfCreatedAt(ctx.rpc, kv.key, kv.create_revision, signal)));
  return freed.some(Boolean);
}
