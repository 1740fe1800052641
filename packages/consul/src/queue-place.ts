import type { ConsulHttp } from './consul-http.js';
import { encodeLockValue, encodePath, type KvEntry, readEntries, type TxnKvOp, type TxnResult, transact } from './kv.js';

/**
 * Holdfast's wait queue for plain locks, which only Holdfast waiters read (`consul lock` does not
 * queue; mutual exclusion never depends on it). It lives beside the lock prefix, not under it, so no
 * user key can name it: key "k" of prefix "p" is `p/k`, its queue the directory
 * `p.queue/<k with each "/" and "%" percent-encoded>/`, one entry per waiter, ordered by CreateIndex.
 */
export const QUEUE_SUFFIX = '.queue';
/** KV flags of a queue entry ("hfqueue" in ASCII), so nothing mistakes one for a lock or a slot. */
export const QUEUE_FLAG = '114522558277989';

/** An entry's name: the waiter's lockId and a count; "~" ends it, so no name is a prefix of another (see untilGone). */
export function entryName(lockId: string, count: number): string {
  return `${lockId}.${count}~`;
}

export function queueDir(prefix: string, key: string): string {
  return `${prefix}${QUEUE_SUFFIX}/${encodeURIComponent(key)}/`;
}

/** The live entries (held by a session), first come first, and those a dead session left. */
export interface QueueView {
  readonly waiters: KvEntry[];
  readonly dead: KvEntry[];
}

/**
 * Joins the queue: an entry held by the waiter's session (it stops counting once the session is gone),
 * and the queue as it then is, read in the same transaction: one round trip.
 */
export async function enqueue(
  http: ConsulHttp,
  place: { readonly dir: string; readonly entryKey: string },
  session: string,
  owner: string,
  lockId: string,
  signal: AbortSignal,
): Promise<QueueView | TxnResult> {
  const value = encodeLockValue({ owner, acquiredAt: new Date().toISOString(), lockId });
  const result = await transact(
    http,
    [
      { Verb: 'lock', Key: place.entryKey, Session: session, Flags: QUEUE_FLAG, Value: value },
      { Verb: 'get-tree', Key: place.dir },
    ],
    signal,
  );
  // The first result is the lock operation's; the tree follows.
  return result.ok ? viewOf(result.entries.slice(1)) : result;
}

export async function readQueue(http: ConsulHttp, dir: string, signal: AbortSignal): Promise<QueueView> {
  // Consistent: a stale read could miss our own entry, and we would queue again at the end.
  const { entries } = await readEntries(http, dir, { recurse: true, consistent: true, signal });
  return viewOf(entries);
}

function viewOf(entries: readonly KvEntry[]): QueueView {
  const ours = entries.filter((entry) => entry.Flags === QUEUE_FLAG);
  const waiters = ours.filter((entry) => entry.Session).sort((a, b) => a.CreateIndex - b.CreateIndex);
  return { waiters, dead: ours.filter((entry) => !entry.Session) };
}

/** Deletes the entries of dead waiters, unless they changed since read. A clean-up: failures are ignored. */
export function prune(http: ConsulHttp, dead: readonly KvEntry[], signal: AbortSignal): void {
  if (dead.length === 0) return;
  void transact(
    http,
    dead.map((entry) => ({ Verb: 'delete-cas', Key: entry.Key, Index: entry.ModifyIndex }) as const),
    signal,
  ).catch(() => undefined);
}

/** The entry's delete, to go in the transaction that grants its waiter the lock. */
export function dequeueOp(entryKey: string): TxnKvOp {
  return { Verb: 'delete', Key: entryKey };
}

export async function dequeue(http: ConsulHttp, entryKey: string, signal: AbortSignal): Promise<void> {
  await http.call('DELETE', `/v1/kv/${encodePath(entryKey)}`, {}, { signal });
}
