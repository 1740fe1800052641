import { BackendError, ErrorCode, HoldfastError } from '@holdfast/core';
import { type BackendGrant, type GrantRequest, MAX_TIMER_MS, type QueuedWait, safetyDeadline, sleep } from '@holdfast/core/backend';
import { type AcquireSettings, tryGrant } from './acquire.js';
import { BLOCKING_WAIT_MS } from './constants.js';
import { ConsulHttpError } from './consul-http.js';
import type { GrantSession } from './grant-session.js';
import { lockConflict } from './inspection.js';
import { invalidSessionRefusal, isLockEntry, type KvEntry, readEntries, readKey } from './kv.js';
import type { LocalTurns } from './local-turns.js';
import { dequeue, dequeueOp, enqueue, entryName, prune, type QueueView, queueDir, readQueue } from './queue-place.js';
import { releaseAttempt } from './release.js';
import type { GrantContext } from './session-grant.js';

export interface QueueSettings extends AcquireSettings {
  readonly callTimeoutMs: number;
}

export interface QueueContext extends GrantContext {
  readonly turns: LocalTurns;
  /** Keeps a clean-up nobody waits for until it ends, so that close() can let it finish first. */
  readonly track: (cleanup: Promise<void>) => void;
  /** Aborted as close() begins: clean-ups that retry stop retrying. */
  readonly closing: AbortSignal;
}

const MAX_RETRY_DELAY_MS = 1000;
const FIRST_RETRY_DELAY_MS = 50;

/** Why a step was cut: the caller's deadline, which is not a failure. */
const DEADLINE = Symbol('deadline');

/**
 * A waiting acquire of a plain lock. It first tries the key as core's plain attempt would (the backend
 * opts in to queuedAcquireTriesFirst), then queues ZooKeeper's way: the provider's waiters on the key take turns
 * (local-turns.ts); the one whose turn it is writes an entry into the key's queue (queue-place.ts) and
 * blocking-queries only the entry before it, so a release wakes one waiter across all providers, not
 * every one. The head alone watches the lock key and tries to take it, with the very transaction of
 * tryGrant (acquire.ts): the lock key's protocol is the Go client's, and a `consul lock` waiter, who
 * does not queue, competes with the head as with anyone.
 *
 * Resolves to a grant, or null at the deadline (a failure then is thrown instead, as core's own wait
 * does); rejects with the signal's reason on abort. Every call it makes is cut at the deadline, so it
 * answers then even if the agent hangs. Whatever way it ends, its queue entry is deleted, and an
 * entry that may outlive it (see leaveQueue) loses its session: no waiter behind it waits forever.
 */
export async function acquireQueued(
  context: QueueContext,
  settings: QueueSettings,
  request: GrantRequest,
  wait: QueuedWait,
): Promise<BackendGrant | null> {
  return new QueuedWaiter(context, settings, request, wait).run();
}

/**
 * The waiter's entry in the queue; `written` once Consul confirmed it, `deleted` by the transaction that
 * granted the lock, `mayLandLate` once a write of it went unanswered (it may still land, after any delete).
 */
interface Entry {
  readonly key: string;
  readonly session: GrantSession;
  written: boolean;
  deleted?: true;
  mayLandLate?: true;
}

class QueuedWaiter {
  private entry: Entry | undefined;
  private entries = 0;
  private attempts = 0;
  private readonly consulKey: string;
  private readonly dir: string;
  /** Aborted at the deadline: cuts whatever call is under way (the Redis queue's `cut`). */
  private readonly cut = new AbortController();

  constructor(
    private readonly context: QueueContext,
    private readonly settings: QueueSettings,
    private readonly request: GrantRequest,
    private readonly wait: QueuedWait,
  ) {
    this.consulKey = `${settings.prefix}/${request.key}`;
    this.dir = queueDir(settings.prefix, request.key);
  }

  /** The first attempt, then the queue: steps until a grant, the deadline or a failure that retrying cannot mend. */
  async run(): Promise<BackendGrant | null> {
    const { signal, deadline } = this.wait;
    // A wait without a limit (or one past setTimeout's range) has no cut: setTimeout would fire at once.
    const untilDeadline = Math.max(0, deadline - Date.now());
    const timer = untilDeadline <= MAX_TIMER_MS ? setTimeout(() => this.cut.abort(DEADLINE), untilDeadline) : undefined;
    try {
      const first = await this.firstAttempt();
      if (first) return first;
      this.wait.onWaiting?.();
      const turn = await this.context.turns.take(this.request.key, signal, deadline);
      if (!turn) return null;
      try {
        return await this.steps();
      } finally {
        this.leaveQueue();
        turn.end();
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Core's plain first attempt, made here: a free key is taken by the acquire transaction alone, and
   * one found taken sends the waiter to the queue without the read that says who holds it (the queue's
   * head reads the key anyway): a request less per contended acquire. A failure that retrying can mend
   * is left to the queue's retries, as core's first attempt left it to its wait; at the deadline it is the answer.
   */
  private async firstAttempt(): Promise<BackendGrant | undefined> {
    try {
      return (await this.attempt(undefined, false)).grant;
    } catch (error) {
      if (this.wait.signal.aborted) throw this.wait.signal.reason;
      if (this.cut.signal.aborted) throw new BackendError('consul', 'acquire: no answer to the first attempt by the deadline');
      if (!isTransient(error) || Date.now() >= this.wait.deadline) throw error;
      return undefined;
    }
  }

  private async steps(): Promise<BackendGrant | null> {
    const { signal, deadline } = this.wait;
    let lastError: unknown;
    let failures = 0;
    for (;;) {
      if (signal.aborted) throw signal.reason;
      if (this.cut.signal.aborted || Date.now() >= deadline) {
        if (lastError !== undefined) throw lastError;
        return null;
      }
      try {
        const grant = await this.step();
        if (grant) return grant;
        lastError = undefined;
        failures = 0;
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        // Cut at the deadline: not a failure of its own.
        if (this.cut.signal.aborted) continue;
        if (!isTransient(error)) throw error;
        lastError = error;
        failures++;
        const delayMs = Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** Math.min(failures - 1, 5));
        await sleep(Math.min(delayMs, Math.max(0, deadline - Date.now())), signal).catch(() => undefined);
      }
    }
  }

  /**
   * Deletes the entry (a clean-up nobody waits for) and gives its session back. An entry that may
   * outlive this (a write of it unanswered, or its delete failed) would stay live as long as its
   * session is renewed, and everyone behind it would wait for it until their deadline: its session is
   * dropped (destroyed now, never renewed again), so it is dead within 2 x session TTL at the very
   * worst, at once when the destroy lands. The delete is retried until it lands, 2 x session TTL
   * passed (the entry is dead by then, and whoever reads the queue prunes it) or close() begins.
   */
  leaveQueue(): void {
    const entry = this.entry;
    this.entry = undefined;
    if (!entry) return;
    if (entry.mayLandLate) this.context.sessions.dropQueueSession(entry.session.id);
    if (entry.deleted && !entry.mayLandLate) {
      void entry.session.leave();
      return;
    }
    this.context.track(this.removeEntry(entry).finally(() => entry.session.leave()));
  }

  private async removeEntry(entry: Entry): Promise<void> {
    const { http, closing } = this.context;
    const until = Date.now() + 2 * entry.session.ttlMs;
    for (let failures = 0; ; failures++) {
      try {
        await dequeue(http, entry.key, this.context.background());
        return;
      } catch {
        if (failures === 0) this.context.sessions.dropQueueSession(entry.session.id);
        if (closing.aborted || Date.now() >= until) return;
        const delayMs = Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** Math.min(failures, 5));
        await sleep(delayMs, closing).catch(() => undefined);
      }
    }
  }

  /** One look at the queue: wait for the predecessor to go, or, at the head, for the lock. */
  private async step(): Promise<BackendGrant | undefined> {
    const { entry, view } = await this.entryInQueue();
    const { waiters, dead } = view ?? (await readQueue(this.context.http, this.dir, this.callSignal()));
    prune(this.context.http, dead, this.context.background());
    const place = waiters.findIndex((waiter) => waiter.Key === entry.key);
    if (place < 0) {
      // Our entry is gone (its session was invalidated): queue again, at the end.
      this.leaveQueue();
      return undefined;
    }
    if (place > 0) {
      await this.untilGone(waiters[place - 1]!);
      return undefined;
    }
    return this.asHead(entry);
  }

  /** Our entry, written if it is not yet; with the queue as the write saw it when it wrote it now. */
  private async entryInQueue(): Promise<{ entry: Entry; view?: QueueView }> {
    if (this.entry?.written) return { entry: this.entry };
    if (!this.entry) {
      const session = await this.context.sessions.forQueue(this.request, this.callSignal());
      this.entry = { key: `${this.dir}${entryName(this.request.lockId, this.entries++)}`, session, written: false };
    }
    const entry = this.entry;
    // Sent again after an unanswered write: a session's lock on its own entry is idempotent.
    const place = { dir: this.dir, entryKey: entry.key };
    let written: Awaited<ReturnType<typeof enqueue>>;
    try {
      written = await enqueue(this.context.http, place, entry.session.id, this.request.owner, this.request.lockId, this.callSignal());
    } catch (error) {
      // No answer: the write may still land, even after the entry's delete.
      entry.mayLandLate = true;
      throw error;
    }
    if ('ok' in written) {
      if (invalidSessionRefusal(written)) entry.session.discard();
      this.leaveQueue();
      const why = written.ok ? 'no answer' : describe(written.errors);
      throw new BackendError('consul', `acquire: could not join the queue of "${this.request.key}" (${why})`);
    }
    entry.written = true;
    return { entry, view: written };
  }

  /**
   * Blocks on the predecessor's entry alone until it is deleted or loses its session (or the deadline).
   * Read as a prefix (no other entry's name starts with it): the answer's index is then the entry's own
   * (or its tombstone's), so the query blocks from its ModifyIndex at once, where a single-key read's
   * index is the whole KV store's and would answer at once after any write anywhere.
   */
  private async untilGone(predecessor: KvEntry): Promise<void> {
    let index = BigInt(predecessor.ModifyIndex);
    for (;;) {
      const remaining = this.wait.deadline - Date.now();
      if (remaining <= 0) return;
      const read = await readEntries(this.context.http, predecessor.Key, {
        recurse: true,
        index,
        waitMs: Math.min(remaining, BLOCKING_WAIT_MS),
        // The HTTP bound of a blocking read is 1.1 x its wait plus the call timeout: cut it at the deadline.
        signal: AbortSignal.any([this.wait.signal, this.cut.signal]),
      });
      const now = read.entries.find((entry) => entry.Key === predecessor.Key);
      if (!now?.Session || now.ModifyIndex !== predecessor.ModifyIndex) return;
      // A smaller index: the server's state was reset; read afresh.
      index = read.index < index ? 0n : read.index;
    }
  }

  /**
   * At the head: look at the lock key, wait while a session holds it (from the index it was seen held
   * at, which is what the provider's key watch can answer for), try it when it looks free; again until
   * granted or the deadline.
   */
  private async asHead(entry: Entry): Promise<BackendGrant | undefined> {
    const { signal, deadline } = this.wait;
    // The index the key was last seen held at; 0n: not known, read it first.
    let heldAt = 0n;
    for (;;) {
      if (heldAt === 0n) {
        const { entry: lock } = await readKey(this.context.http, this.consulKey, false, this.callSignal());
        // The first attempt did not read the key: a key used otherwise is a conflict here, not a wait.
        if (lock && !isLockEntry(lock)) throw lockConflict(this.request.key, lock);
        if (lock?.Session) heldAt = BigInt(lock.ModifyIndex);
      }
      if (heldAt > 0n) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) return undefined;
        await this.context.watches.waitUntilFree(this.consulKey, heldAt, { signal, timeoutMs: Math.min(remaining, BLOCKING_WAIT_MS) });
        if (signal.aborted) throw signal.reason;
      }
      if (Date.now() >= deadline) return undefined;
      const outcome = await this.attempt(entry);
      if (outcome.grant) return outcome.grant;
      heldAt = outcome.index;
      if (outcome.lockDelayUntil === undefined) continue;
      // A lock-delay changes nothing Consul could report: wait it out, like the Go client, then look again.
      const pauseMs = Math.min(outcome.lockDelayUntil, deadline) - Date.now();
      await sleep(Math.max(0, pauseMs), signal).catch(() => undefined);
      heldAt = 0n;
    }
  }

  /**
   * tryGrant under the call's bounds. Each attempt has its own lockId: an attempt whose answer never
   * came is undone by its lockId, which then can never match a later grant of this waiter. A grant
   * whose lease ran out on its way (a stalled process or network) is released and tried again.
   */
  private async attempt(
    entry: Entry | undefined,
    readIfTaken = true,
  ): Promise<{ grant?: BackendGrant; index: bigint; lockDelayUntil?: number }> {
    const request = { ...this.request, lockId: `${this.request.lockId}.${this.attempts++}` };
    const sentAt = Date.now();
    const signal = this.callSignal();
    let outcome: Awaited<ReturnType<typeof tryGrant>>;
    try {
      const alongside = entry ? [dequeueOp(entry.key)] : [];
      outcome = await tryGrant(this.context, this.settings, request, { signal }, alongside, readIfTaken);
    } catch (error) {
      void releaseAttempt(this.context.http, this.consulKey, request.lockId, this.context.background()).catch(() => undefined);
      // The entry keeps its place: it is on the queue session, which the attempt's write never uses (a
      // lock session it retired does not keep the entry alive); if that write lands late, its delete of
      // the entry makes this waiter queue again, nothing worse.
      throw error;
    }
    if (!outcome.granted) return { index: outcome.wake?.index ?? 0n, lockDelayUntil: outcome.wake?.lockDelayUntil };
    const grant = outcome.grant;
    if (entry) entry.deleted = true;
    // tryGrant already releases a grant whose call was cut as it arrived: never hand that one out.
    if (signal.aborted) throw signal.reason;
    if (Date.now() >= safetyDeadline(sentAt, request.ttlMs)) {
      void grant.release({ signal: this.context.background() }).catch(() => undefined);
      throw new BackendError(
        'consul',
        'acquire: the grant arrived after its lease had run out (a stalled process or network); it was released',
      );
    }
    return { grant, index: 0n };
  }

  /** One call's bound: the caller's signal, the per-call timeout and the deadline. */
  private callSignal(): AbortSignal {
    return AbortSignal.any([this.wait.signal, this.cut.signal, AbortSignal.timeout(this.settings.callTimeoutMs)]);
  }
}

/** Backend failures and cut calls are worth retrying while the caller still waits; bad input and conflicts are not. */
function isTransient(error: unknown): boolean {
  if (error instanceof ConsulHttpError) return error.retryable;
  return !(error instanceof HoldfastError) || error.code === ErrorCode.Backend;
}

function describe(errors: readonly { what: string }[]): string {
  return errors.map((error) => error.what).join('; ') || 'refused';
}
