import { type GrantRequest, isModeRequest, untilAborted } from '@holdfast/core/backend';
import { NESTED_SLACK, oldestContenders, oldestFirst } from './contenders.js';
import type { EtcdContext } from './context.js';
import { encodeEntry } from './entry.js';
import { deleteIfCreatedAt, type KeyValue, rangeOf, type TxnResponse, txn } from './kv.js';
import { MODE_NAME_PREFIX } from './read-write/modes.js';
import { failure } from './rpc.js';
import type { Session } from './session.js';

/** A contender's entry just written, and the oldest contenders of its key at that revision. */
export interface Joined {
  readonly session: Session;
  readonly entry: KeyValue;
  readonly dir: Buffer;
  /** The revision of the write: every later change has a higher one. */
  readonly revision: string;
  readonly oldest: KeyValue[];
  readonly at: number;
}

/**
 * mutex.go's tryAcquire: one transaction puts the contender's entry on the session's lease and reads
 * the key's oldest contenders, so an uncontended grant is one round trip. Go's Then/Else differ only
 * in whether the put happens; here every attempt writes, because the value names the attempt
 * (its lockId, for abandon) and its time (the grant's acquiredAt). A put keeps an existing entry's
 * create revision, so a waiting acquire keeps its place in line across its attempts. A put on a lease
 * etcd no longer has fails the whole transaction: an entry is never left without its session.
 */
export async function join(
  ctx: EtcdContext,
  request: GrantRequest,
  heads: number,
  limit: number | undefined,
  signal: AbortSignal,
): Promise<Joined> {
  const { key, place, lockId, owner, reason, ttlMs, autoRenew } = request;
  const session = await ctx.sessions.shared(ttlMs, signal);
  const dir = ctx.layout.dir(key);
  // A waiting acquire's attempts share one entry (its place); a single attempt has its own.
  const namePrefix = isModeRequest(request) ? MODE_NAME_PREFIX[request.mode] : '';
  const name = ctx.layout.entry(key, session.hex, place?.id ?? lockId, namePrefix);
  const at = Date.now();
  const value = encodeEntry({
    owner,
    ...(reason === undefined ? {} : { reason }),
    lockId,
    ...(limit === undefined ? {} : { limit }),
    at,
    ...(autoRenew ? {} : { until: at + ttlMs }),
  });
  // The write is not cancelled with the caller's signal: a cancelled request may still land after
  // any undo core sends, and leave an entry that holds the key for as long as the session lives.
  // It runs to its answer within the per-call bound, and a caller that left meanwhile has it undone
  // twice: at once, by a delete of exactly this write (its value names the attempt, so a later
  // attempt's entry is never touched), which etcd mostly applies before anything the caller does
  // next; and, should the write have been applied after that delete, once its answer is in.
  const write = txn(
    ctx.rpc,
    [],
    [
      { request_put: { key: name, value, lease: session.id } },
      { request_range: { key: name } },
      { request_range: oldestFirst(dir, heads + NESTED_SLACK) },
    ],
    [],
    ctx.background(),
  );
  const res = await untilAborted(write, signal).catch((error: unknown) => {
    if (signal.aborted) {
      void deleteIfValue(ctx, name, value);
      void write.then(
        (late) => undo(ctx, late),
        () => undefined,
      );
    }
    throw error;
  });
  const entry = rangeOf(res, 1).kvs[0];
  if (!entry) throw failure('Txn', 'the entry just written is missing');
  const oldest = await oldestContenders(ctx, dir, rangeOf(res, 2), heads, signal);
  return { session, entry, dir, revision: res.header.revision, oldest, at };
}

/** Deletes the entry a write made for a caller that has left (unless another write replaced it). */
async function undo(ctx: EtcdContext, res: TxnResponse): Promise<void> {
  const entry = rangeOf(res, 1).kvs[0];
  if (entry) await deleteIfCreatedAt(ctx.rpc, entry.key, entry.create_revision, ctx.background()).catch(() => undefined);
}

/** Deletes `key` if it still holds exactly `value` (this attempt's write, not a later one's). */
async function deleteIfValue(ctx: EtcdContext, key: Buffer, value: Buffer): Promise<void> {
  await txn(ctx.rpc, [{ key, target: 'VALUE', result: 'EQUAL', value }], [{ request_delete_range: { key } }], [], ctx.background()).catch(
    () => undefined,
  );
}
