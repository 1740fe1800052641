import type { GrantRequest, QueuePlace } from '@holdfast/core/backend';
import type { EtcdContext } from './context.js';
import { decodeEntry } from './entry.js';
import { type KeyValue, prefixEnd, range, txn } from './kv.js';
import { directEntries } from './layout.js';

/** The entries of `key` whose name ends in "-<suffix>" (under whichever session wrote them). */
async function entriesNamed(ctx: EtcdContext, key: string, suffix: string, signal: AbortSignal): Promise<KeyValue[]> {
  const dir = ctx.layout.dir(key);
  const res = await range(ctx.rpc, { key: dir, range_end: prefixEnd(dir) }, signal);
  return directEntries(dir, res.kvs).filter((kv) => kv.key.toString().endsWith(`-${suffix}`));
}

/** Deletes `kv` if nobody wrote it since it was read (the same modification revision). */
async function deleteUnchanged(ctx: EtcdContext, kv: KeyValue, signal: AbortSignal): Promise<void> {
  await txn(
    ctx.rpc,
    [{ key: kv.key, target: 'MOD', result: 'EQUAL', mod_revision: kv.mod_revision }],
    [{ request_delete_range: { key: kv.key } }],
    [],
    signal,
  );
}

/** A waiting acquire ended without a lock: its entry (its place in line) goes, so nobody waits for it. */
export async function leaveQueue(ctx: EtcdContext, key: string, place: QueuePlace, signal: AbortSignal): Promise<void> {
  for (const kv of await entriesNamed(ctx, key, place.id, signal)) await deleteUnchanged(ctx, kv, signal);
}

/**
 * Frees what `request` may have written although its answer never came: the entry it wrote, if its
 * value still names this attempt's lockId (a later attempt of the same place rewrites it, and a
 * later grant must never be freed by an earlier attempt's undo).
 */
export async function abandon(ctx: EtcdContext, request: GrantRequest, signal: AbortSignal): Promise<void> {
  const suffix = request.place?.id ?? request.lockId;
  for (const kv of await entriesNamed(ctx, request.key, suffix, signal)) {
    if (decodeEntry(kv)?.lockId === request.lockId) await deleteUnchanged(ctx, kv, signal);
  }
}
