import { sleep } from '@holdfast/core/backend';
import type { ConsulHttp } from './consul-http.js';
import type { GrantContext } from './grant.js';
import {
  encodeLockValue,
  encodePath,
  invalidSessionRefusal,
  type KvEntry,
  readEntries,
  type TxnKvOp,
  type TxnResult,
  transact,
} from './kv.js';
import type { GrantSession } from './sessions.js';

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

const MAX_RETRY_DELAY_MS = 1000;
const FIRST_RETRY_DELAY_MS = 50;

/**
 * One waiter's entry in a key's queue (above), on the provider's queue session. `written`
 * once Consul confirmed it, `deleted` by the transaction that granted the lock; a write that went
 * unanswered (or is still on its way) may land after any delete, which drop() must allow for.
 */
export class QueueEntry {
  written = false;
  deleted = false;
  private writing = false;
  private mayLandLate = false;

  constructor(
    private readonly context: GrantContext,
    readonly dir: string,
    readonly key: string,
    private readonly session: GrantSession,
  ) {}

  /**
   * Writes the entry and reads the queue in one round trip: the queue as the write saw it, or why
   * Consul refused it. Sent again after an unanswered write: a session's lock on its own entry is idempotent.
   */
  async write(owner: string, lockId: string, signal: AbortSignal): Promise<QueueView | string> {
    let written: Awaited<ReturnType<typeof enqueue>>;
    this.writing = true;
    try {
      written = await enqueue(this.context.http, { dir: this.dir, entryKey: this.key }, this.session.id, owner, lockId, signal);
    } catch (error) {
      this.mayLandLate = true;
      throw error;
    } finally {
      this.writing = false;
    }
    if (!('ok' in written)) {
      this.written = true;
      return written;
    }
    if (invalidSessionRefusal(written)) this.session.discard();
    return written.ok ? 'no answer' : written.errors.map((error) => error.what).join('; ') || 'refused';
  }

  /**
   * Deletes the entry (a clean-up nobody waits for) and gives its session back. An entry that may
   * outlive its waiter (a write of it unanswered, or its delete failed) would stay live as long as its
   * session is renewed, and everyone behind it would wait for it until their deadline: its session is
   * dropped (destroyed now, never renewed again), so it is dead within 2 x session TTL at the very
   * worst, at once when the destroy lands. The delete is retried until it lands, 2 x session TTL
   * passed (the entry is dead by then, and whoever reads the queue prunes it) or close() begins.
   */
  drop(): void {
    const mayLandLate = this.mayLandLate || this.writing;
    if (mayLandLate) this.context.sessions.dropQueueSession(this.session.id);
    if (!mayLandLate && (this.deleted || !this.written)) {
      void this.session.leave();
      return;
    }
    this.context.track(this.remove().finally(() => this.session.leave()));
  }

  private async remove(): Promise<void> {
    const { http, closing } = this.context;
    const until = Date.now() + 2 * this.session.ttlMs;
    for (let failures = 0; ; failures++) {
      try {
        await dequeue(http, this.key, this.context.background());
        return;
      } catch {
        if (failures === 0) this.context.sessions.dropQueueSession(this.session.id);
        if (closing.aborted || Date.now() >= until) return;
        const delayMs = Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** Math.min(failures, 5));
        await sleep(delayMs, closing).catch(() => undefined);
      }
    }
  }
}

/** A waiter's place in the provider's line for a key: `ready` once it is its turn. */
export interface Turn {
  readonly ready: Promise<void>;
  /** Leaves the line; if it was this waiter's turn, the next waiter's begins. */
  end(): void;
}

interface InLine {
  start(): void;
}

/**
 * The provider's waiters on one key take turns, first come first: only the one whose turn it is
 * stands in Consul's queue, so N local waiters cost one queue entry and one blocking query, not N.
 * A place in line outlives any one wait for it (core waits in slices): only end() gives it up.
 */
export class LocalTurns {
  private readonly lines = new Map<string, InLine[]>();

  join(key: string): Turn {
    let line = this.lines.get(key);
    if (!line) this.lines.set(key, (line = []));
    let start!: () => void;
    const ready = new Promise<void>((resolve) => {
      start = resolve;
    });
    const place: InLine = { start };
    line.push(place);
    if (line.length === 1) start();
    return { ready, end: () => this.leave(key, place) };
  }

  private leave(key: string, place: InLine): void {
    const line = this.lines.get(key);
    const at = line?.indexOf(place) ?? -1;
    if (!line || at < 0) return;
    line.splice(at, 1);
    if (line.length === 0) this.lines.delete(key);
    else if (at === 0) line[0]!.start();
  }
}
