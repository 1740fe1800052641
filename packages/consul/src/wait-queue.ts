import { BackendError } from '@holdfast/core';
import {
  busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  linkedController,
  type QueuePlace,
  type WaitOptions,
} from '@holdfast/core/backend';
import { BLOCKING_WAIT_MS } from './constants.js';
import type { GrantContext } from './grant.js';
import { isLockEntry, readEntries, readKey } from './kv.js';
import { type AcquireSettings, type ConsulWake, tryGrant } from './lock.js';
import { dequeueOp, entryName, LocalTurns, prune, QueueEntry, type QueueView, queueDir, readQueue, type Turn } from './queue.js';
import { sessionTtlFor } from './session.js';

export interface QueueSettings extends AcquireSettings {
  readonly callTimeoutMs: number;
}

/** Consul adds up to wait/16 to a blocking query's wait: asking for 16/17 of the time left ends it within. */
const JITTER_ROOM = 16 / 17;
/** Busy without a request: not this place's turn yet; the wait that follows goes on in the queue. */
const NOT_YET = busy<ConsulWake>({ index: 0n });

/** What the queue knows of one waiting acquire (one QueuePlace), from its first busy answer to its end. */
interface Waiter {
  readonly id: string;
  readonly key: string;
  readonly dir: string;
  readonly owner: string;
  readonly lockId: string;
  readonly sessionTtlMs: number;
  turn?: Turn;
  entry?: QueueEntry;
  entriesWritten: number;
  /** The entry just before ours, blocked on until it goes, from `index`. */
  predecessor?: { readonly key: string; readonly modifyIndex: number; index: bigint };
  /** Our entry was first in the queue: this waiter attempts, with its entry's delete alongside. */
  head: boolean;
  ended: boolean;
}

/**
 * Holdfast's wait queue of plain locks, ZooKeeper's way. A waiting acquire's first attempt is the
 * plain acquire transaction, as a `consul lock` waiter's is. Once busy, it queues: the provider's
 * waiters on the key take turns (queue.ts); the one whose turn it is writes an entry into the
 * key's queue (queue.ts) and blocks on the entry before it alone, so a release wakes one waiter
 * across all providers, not every one. The head alone watches the lock key and attempts, with the very
 * transaction of tryGrant plus its entry's delete: the lock key's protocol stays the Go client's.
 *
 * Core drives it: attempts (attempt()) and waits (untilHead(), or the lock key's wait once at the head)
 * alternate; core calls end() through leaveQueue when the acquire ends without a lock. An entry that may
 * outlive its waiter loses its session, so nobody behind it waits for it until their deadline.
 */
export class WaitQueue {
  private readonly waiters = new Map<string, Waiter>();
  private readonly turns = new LocalTurns();

  constructor(
    private readonly context: GrantContext,
    private readonly settings: QueueSettings,
  ) {}

  async attempt(request: GrantRequest, place: QueuePlace, call: CallContext): Promise<GrantOutcome<ConsulWake>> {
    const waiter = this.waiters.get(place.id);
    if (!waiter) {
      // A key found taken is not read: the waiter queues, and the head reads the key anyway.
      const outcome = await tryGrant(this.context, this.settings, request, call, [], false);
      if (!outcome.granted && !this.waiters.has(place.id)) this.waiters.set(place.id, this.newWaiter(request, place));
      return outcome;
    }
    const entry = waiter.entry;
    if (!waiter.head || !entry) return NOT_YET;
    let outcome: GrantOutcome<ConsulWake>;
    try {
      outcome = await tryGrant(this.context, this.settings, request, call, [dequeueOp(entry.key)]);
    } catch (error) {
      // The entry's delete may have landed unanswered: look at the queue again before the next attempt.
      waiter.head = false;
      throw error;
    }
    if (outcome.granted) {
      entry.deleted = true;
      this.end(waiter);
    }
    return outcome;
  }

  /** The waiter of `place` while it is still behind the head: its waits are the queue's, not the lock key's. */
  behindHead(place: QueuePlace | undefined): Waiter | undefined {
    const waiter = place && this.waiters.get(place.id);
    return waiter && !waiter.head ? waiter : undefined;
  }

  /**
   * One slice of the wait in line: take the local turn, write the entry, block on the predecessor, and
   * at the head wait while the lock key is held. Resolves when an attempt is worth making or the slice
   * ends (where the next slice goes on); rejects on a failure, which core answers with a poll.
   */
  async untilHead(waiter: Waiter, options: WaitOptions): Promise<void> {
    const until = Date.now() + options.timeoutMs;
    const { controller, dispose } = linkedController(options.signal);
    const timer = setTimeout(() => controller.abort(new Error('the wait slice ended')), options.timeoutMs);
    const cut = controller.signal;
    try {
      waiter.turn ??= this.turns.join(waiter.key);
      if (!(await reached(waiter.turn.ready, cut))) return;
      while (!waiter.ended && !waiter.head) {
        if (waiter.predecessor && !(await this.untilGone(waiter.predecessor, until, cut))) return;
        waiter.predecessor = undefined;
        await this.lookAtQueue(waiter, this.callSignal(cut));
      }
      if (waiter.head) await this.untilLockFree(waiter, until, cut);
    } catch (error) {
      // Cut by the slice's end or by core: no failure; the next slice goes on from here.
      if (cut.aborted) return;
      throw error;
    } finally {
      clearTimeout(timer);
      dispose();
    }
  }

  /** The acquire of `place` ended without a lock: its turn passes on and its entry goes. */
  leave(place: QueuePlace): void {
    const waiter = this.waiters.get(place.id);
    if (waiter) this.end(waiter);
  }

  private newWaiter(request: GrantRequest, place: QueuePlace): Waiter {
    const { key, owner, lockId } = request;
    const dir = queueDir(this.settings.prefix, key);
    const sessionTtlMs = sessionTtlFor(request.ttlMs);
    return { id: place.id, key, dir, owner, lockId, sessionTtlMs, entriesWritten: 0, head: false, ended: false };
  }

  private end(waiter: Waiter): void {
    waiter.ended = true;
    this.waiters.delete(waiter.id);
    waiter.turn?.end();
    this.dropEntry(waiter);
  }

  /** Where our entry stands: first (the head), behind another (blocked on it next), or gone (queue again). */
  private async lookAtQueue(waiter: Waiter, signal: AbortSignal): Promise<void> {
    const { entry, view } = await this.entryInQueue(waiter, signal);
    const { waiters, dead } = view ?? (await readQueue(this.context.http, waiter.dir, signal));
    prune(this.context.http, dead, this.context.background());
    if (waiter.ended || waiter.entry !== entry) return;
    const at = waiters.findIndex((candidate) => candidate.Key === entry.key);
    // Our entry is gone (its session was invalidated): queue again, at the end.
    if (at < 0) return this.dropEntry(waiter);
    if (at === 0) {
      waiter.head = true;
      return;
    }
    const before = waiters[at - 1]!;
    waiter.predecessor = { key: before.Key, modifyIndex: before.ModifyIndex, index: BigInt(before.ModifyIndex) };
  }

  /** Our entry, written if it is not yet; with the queue as the write saw it when it wrote it now. */
  private async entryInQueue(waiter: Waiter, signal: AbortSignal): Promise<{ entry: QueueEntry; view?: QueueView }> {
    if (waiter.entry?.written) return { entry: waiter.entry };
    if (!waiter.entry) {
      const session = await this.context.sessions.forQueue(waiter.sessionTtlMs, signal);
      if (waiter.ended || waiter.entry) {
        void session.leave();
        throw new BackendError('consul', 'acquire: the wait in line ended');
      }
      waiter.entry = new QueueEntry(this.context, waiter.dir, `${waiter.dir}${entryName(waiter.id, waiter.entriesWritten++)}`, session);
    }
    const entry = waiter.entry;
    const view = await entry.write(waiter.owner, waiter.lockId, signal);
    if (typeof view === 'string') {
      this.dropEntry(waiter);
      throw new BackendError('consul', `acquire: could not join the queue of "${waiter.key}" (${view})`);
    }
    return { entry, view };
  }

  /**
   * Blocks on the predecessor's entry alone until it is deleted or loses its session: true once it
   * went, false when the slice ended first. Read as a prefix (no other entry's name starts with it):
   * the answer's index is then the entry's own (or its tombstone's), so the query blocks from its
   * ModifyIndex at once, where a single-key read's index is the whole KV store's and would answer at
   * once after any write anywhere.
   */
  private async untilGone(predecessor: NonNullable<Waiter['predecessor']>, until: number, cut: AbortSignal): Promise<boolean> {
    for (;;) {
      const remaining = until - Date.now();
      if (remaining <= 0) return false;
      const read = await readEntries(this.context.http, predecessor.key, {
        recurse: true,
        index: predecessor.index,
        // Answered before the slice's cut, which would cost the query its keep-alive socket.
        waitMs: Math.max(1, Math.floor(Math.min(remaining, BLOCKING_WAIT_MS) * JITTER_ROOM)),
        signal: cut,
      });
      const now = read.entries.find((entry) => entry.Key === predecessor.key);
      if (!now?.Session || now.ModifyIndex !== predecessor.modifyIndex) return true;
      // A smaller index: the server's state was reset; read afresh.
      predecessor.index = read.index < predecessor.index ? 0n : read.index;
    }
  }

  /**
   * At the head: while a session holds the lock key, wait on the provider's watch of it from the index
   * it was seen held at. A key used otherwise is left to the attempt, which reports the conflict.
   */
  private async untilLockFree(waiter: Waiter, until: number, cut: AbortSignal): Promise<void> {
    const consulKey = `${this.settings.prefix}/${waiter.key}`;
    const { entry } = await readKey(this.context.http, consulKey, false, this.callSignal(cut));
    if (!entry?.Session || !isLockEntry(entry)) return;
    await this.context.watches.waitUntilFree(consulKey, BigInt(entry.ModifyIndex), {
      signal: cut,
      timeoutMs: Math.max(0, until - Date.now()),
    });
  }

  /** The waiter stands in no queue any more (until it writes a new entry). */
  private dropEntry(waiter: Waiter): void {
    const entry = waiter.entry;
    waiter.entry = undefined;
    waiter.head = false;
    waiter.predecessor = undefined;
    entry?.drop();
  }

  /** One call's bound within a slice: the slice's cut and the per-call timeout. */
  private callSignal(cut: AbortSignal): AbortSignal {
    return AbortSignal.any([cut, AbortSignal.timeout(this.settings.callTimeoutMs)]);
  }
}

/** Whether `ready` resolved before `cut` aborted. */
function reached(ready: Promise<void>, cut: AbortSignal): Promise<boolean> {
  if (cut.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onCut = (): void => resolve(false);
    cut.addEventListener('abort', onCut, { once: true });
    void ready.then(() => {
      cut.removeEventListener('abort', onCut);
      resolve(true);
    });
  });
}
