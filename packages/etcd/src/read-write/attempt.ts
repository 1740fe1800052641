import { LockConflictError } from '@holdfast/core';
import { busy, type CallContext, type GrantOutcome, granted, type ModeRequest } from '@holdfast/core/backend';
import { predecessorOf } from '../contenders.js';
import type { EtcdContext, EtcdWake } from '../context.js';
import { join } from '../join.js';
import { deleteIfCreatedAt, type KeyValue, prefixEnd } from '../kv.js';
import { EtcdGrant } from '../mutex/grant.js';
import { MODE_NAME_PREFIX, otherUseOf } from './modes.js';

/**
 * One attempt at a read-write grant, rwmutex.go's RLock/Lock on the mutex's entries (join.ts): a
 * writer holds once no contender is older than its entry; a reader holds once no entry older than
 * its own is anything but a reader ("write-", a plain contender of `etcdctl lock`). The line is FIFO
 * by create revision, so a reader that comes after a waiting writer waits for it: a stream of
 * readers cannot starve a writer. A waiting contender watches one entry for deletion (no herd): a
 * writer the entry just before it, a reader the last non-reader before it.
 *
 * The token is the entry's create revision, as for a lock: a writer holds only after every older
 * entry went, and every grant after it comes from a younger entry, so a fenced store sees a writer's
 * token above every grant before it and below every grant after it.
 */
export async function tryGrantMode(ctx: EtcdContext, request: ModeRequest, call: CallContext): Promise<GrantOutcome<EtcdWake>> {
  const { signal } = call;
  const joined = await join(ctx, request, 1, undefined, signal);
  const { entry, dir, revision, oldest } = joined;
  const head = oldest[0];
  const otherUse = head && otherUseOf(head);
  if (otherUse) {
    await deleteIfCreatedAt(ctx.rpc, entry.key, entry.create_revision, signal);
    throw new LockConflictError(request.key, `${otherUse}, not a read-write lock`);
  }
  const first = !head || head.create_revision === entry.create_revision;
  const blocker = first
    ? null
    : request.mode === 'exclusive'
      ? await predecessorOf(ctx, dir, entry.create_revision, signal)
      : await lastNonReaderBefore(ctx, dir, entry.create_revision, signal);
  if (!blocker && (first || request.mode === 'shared')) {
    return granted(await EtcdGrant.start(ctx, request, joined, BigInt(entry.create_revision), signal));
  }
  if (!request.place) {
    await deleteIfCreatedAt(ctx.rpc, entry.key, entry.create_revision, signal);
    return busy({ revision });
  }
  const place = { key: entry.key, createRevision: entry.create_revision };
  // A writer's predecessor went between the two reads: try again at once, it may be the oldest now.
  return busy(blocker ? { revision, predecessor: blocker.key, entry: place } : { revision, retryNow: true, entry: place });
}

/** The youngest entry older than `createRevision` that is not a reader's: the readers' entries sort together by name. */
async function lastNonReaderBefore(ctx: EtcdContext, dir: Buffer, createRevision: string, signal: AbortSignal): Promise<KeyValue | null> {
  const readers = Buffer.concat([dir, Buffer.from(MODE_NAME_PREFIX.shared)]);
  const [below, above] = await Promise.all([
    predecessorOf(ctx, dir, createRevision, signal, { key: dir, rangeEnd: readers }),
    predecessorOf(ctx, dir, createRevision, signal, { key: prefixEnd(readers), rangeEnd: prefixEnd(dir) }),
  ]);
  if (!below || !above) return below ?? above;
  return BigInt(below.create_revision) > BigInt(above.create_revision) ? below : above;
}
