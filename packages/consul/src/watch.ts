import { linkedController, sleep, type WaitList } from '@holdfast/core/backend';
import { BLOCKING_WAIT_MS, READ_WRITE_FLAG, SEMAPHORE_LOCK_KEY } from './constants.js';
import { ConsulHttpError } from './consul-http.js';
import type { KvEntry, KvSnapshot } from './kv.js';
import { isSemaphoreDir, roomIn, semaphoreState } from './semaphore-record.js';

/** A held grant as a watch sees it (the Go client's monitorLock): what to read for it, and how to tell it it is gone. */
export interface Monitored {
  /** What the watch reads for it: a lock's key, or a semaphore's directory (ending in "/"). */
  readonly watchKey: string;
  /** The index of the grant's latest write: a read started before monitoring and below it says nothing yet. */
  readonly modifyIndex: bigint;
  /** Why the read shows this grant gone, or undefined while it shows it held. */
  lossIn(view: SnapshotView): string | undefined;
  lose(detail: string, cause?: unknown): void;
}

export interface WatchPolicy {
  /** Consecutive failed reads (network, 5xx) tolerated before the watched grants are lost (Go: MonitorRetries). */
  readonly retries: number;
  readonly retryMs: number;
}

/** A blocking query for the watched keys, answering once Consul's index passes `index` (0n: at once), or after `waitMs`. */
export type WatchRead = (index: bigint, waitMs: number, signal: AbortSignal) => Promise<KvSnapshot>;

/** After waking a waiter for a free key: if the key has not changed by then, the next waiter is woken. */
const HAND_OFF_RECHECK_MS = 1000;

interface WatchedKey {
  /** Monitored grants -> reads started before monitoring began: later reads know the grant. */
  readonly grants: Map<Monitored, number>;
  /** Index of the last read, if it showed room (a lock key absent or held by no session, a free slot). */
  freeAt: bigint | undefined;
}

/**
 * One blocking-query loop over some keys of one provider: it tells the provider's grants of those keys
 * when they are gone and wakes the provider's waiters when a key is free. `read` decides what one
 * query covers (one key, one semaphore's directory, or the whole prefix). Runs while some key has a
 * grant or a waiter.
 */
export class Watch {
  private readonly keys = new Map<string, WatchedKey>();
  private readsStarted = 0;
  /** The highest index any read had: a lower one means the server's state was reset. */
  private highestIndex = 0n;
  private running: AbortController | undefined;
  private resting: AbortController | undefined;
  private handingOff = false;
  private closed = false;

  constructor(
    private readonly read: WatchRead,
    private readonly waiters: WaitList<string>,
    private readonly policy: WatchPolicy,
    /** Pause after each read while nobody waits on the watched keys: for a prefix, whose re-read is not free. */
    private readonly restMs: number,
    /** Where the first query blocks from: the index the caller last saw the key at (0n: read at once). */
    private index: bigint,
    private readonly onIdle: () => void,
  ) {}

  has(watchKey: string): boolean {
    return this.keys.has(watchKey);
  }

  monitor(grant: Monitored): void {
    this.watched(grant.watchKey).grants.set(grant, this.readsStarted);
    this.start();
  }

  unmonitor(grant: Monitored): void {
    this.keys.get(grant.watchKey)?.grants.delete(grant);
    this.forgetIfUnused(grant.watchKey);
  }

  /** Registers interest for a waiter that saw the key busy at `since`; true if a read already showed room since. */
  addWaiter(watchKey: string, since: bigint): boolean {
    const { freeAt } = this.watched(watchKey);
    this.start();
    this.resting?.abort();
    return freeAt !== undefined && freeAt >= since;
  }

  /** Drops the key once neither a grant nor a waiter needs it. */
  forgetIfUnused(watchKey: string): void {
    const watched = this.keys.get(watchKey);
    if (watched && watched.grants.size === 0 && !this.waiters.has(watchKey)) this.keys.delete(watchKey);
  }

  close(): void {
    this.closed = true;
    this.running?.abort();
  }

  private watched(watchKey: string): WatchedKey {
    let watched = this.keys.get(watchKey);
    if (!watched) this.keys.set(watchKey, (watched = { grants: new Map(), freeAt: undefined }));
    return watched;
  }

  /**
   * Once idle, the query in flight is left to finish (the loop then ends) rather than aborted: an
   * aborted request costs its keep-alive socket, and the next lock would need one again.
   */
  private start(): void {
    if (this.running || this.closed) return;
    const controller = new AbortController();
    this.running = controller;
    void this.loop(controller.signal).finally(() => {
      if (this.running === controller) this.running = undefined;
      // Interest that arrived while the loop was winding down needs a new loop.
      if (this.keys.size > 0) this.start();
      else this.onIdle();
    });
  }

  private async loop(signal: AbortSignal): Promise<void> {
    let retriesLeft = this.policy.retries;
    while (!signal.aborted && this.keys.size > 0) {
      try {
        const readNumber = ++this.readsStarted;
        const snapshot = await this.read(this.index, this.handingOff ? HAND_OFF_RECHECK_MS : BLOCKING_WAIT_MS, signal);
        const reset =
          snapshot.index < this.highestIndex
            ? `Consul's index went back from ${this.highestIndex} to ${snapshot.index}: its state was reset (restart without data?)`
            : undefined;
        if (snapshot.index > this.highestIndex || reset) this.highestIndex = snapshot.index;
        // A smaller index means the state was reset (restore, new leader without data): start over.
        this.index = snapshot.index < this.index ? 0n : snapshot.index;
        retriesLeft = this.policy.retries;
        this.apply(snapshot.entries, snapshot.index, readNumber, reset);
        if (this.restMs > 0 && !this.anyWaiter()) await this.rest(signal);
      } catch (error) {
        if (signal.aborted) return;
        const retryable = !(error instanceof ConsulHttpError) || error.retryable;
        if (retryable && retriesLeft > 0) {
          retriesLeft--;
        } else {
          // The monitor gave up: like the Go client, every grant it watched is then lost.
          this.forEachGrant((grant) => grant.lose('the lock monitor failed', error));
          // Waiting acquires ride out transient failures (an election); other errors are theirs to see.
          if (!retryable) for (const watchKey of [...this.keys.keys()]) this.waiters.wakeAll(watchKey, undefined);
        }
        this.index = 0n;
        await sleep(this.policy.retryMs, signal).catch(() => undefined);
      }
    }
  }

  private apply(entries: KvEntry[], index: bigint, readNumber: number, reset: string | undefined): void {
    const view = new SnapshotView(entries);
    let handingOff = false;
    for (const [watchKey, watched] of [...this.keys]) {
      this.judge(watched, view, index, readNumber, reset);
      const room = roomFor(view, watchKey);
      watched.freeAt = room > 0 ? index : undefined;
      // One waiter per free slot: the provider's waiters take turns instead of all racing for it.
      let woken = 0;
      while (woken < room && this.waiters.wakeFirst(watchKey, () => undefined)) woken++;
      handingOff ||= room > 0 && this.waiters.has(watchKey);
    }
    this.handingOff = handingOff;
  }

  /**
   * A read speaks for a grant if it started after the grant was monitored (consistent reads are
   * linearizable), or if its index covers the grant's write. Not the index alone: after a reset the
   * server's indexes start again below every index it gave before.
   */
  private judge(watched: WatchedKey, view: SnapshotView, index: bigint, readNumber: number, reset: string | undefined): void {
    for (const [grant, since] of [...watched.grants]) {
      if (readNumber <= since && index < grant.modifyIndex) continue;
      const what = grant.lossIn(view);
      if (what === undefined) continue;
      // Read after the grant, yet below its index: the server forgot its history.
      const note =
        reset ??
        (index < grant.modifyIndex
          ? `Consul's index ${index} is below this grant's ${grant.modifyIndex}: its state was reset (restart without data?)`
          : undefined);
      watched.grants.delete(grant);
      grant.lose(note ? `${what}; ${note}` : what);
    }
  }

  private forEachGrant(fn: (grant: Monitored) => void): void {
    for (const watched of [...this.keys.values()]) {
      for (const grant of [...watched.grants.keys()]) {
        watched.grants.delete(grant);
        fn(grant);
      }
    }
  }

  private anyWaiter(): boolean {
    for (const watchKey of this.waiters.keys()) if (this.keys.has(watchKey)) return true;
    return false;
  }

  /** A waiter that arrives meanwhile cuts the pause short. */
  private async rest(signal: AbortSignal): Promise<void> {
    const { controller, dispose } = linkedController(signal);
    this.resting = controller;
    await sleep(this.restMs, controller.signal).catch(() => undefined);
    this.resting = undefined;
    dispose();
  }
}

/** One watch read's entries, looked up by key (a lock) or by directory (a semaphore). */
export class SnapshotView {
  private byKey: Map<string, KvEntry> | undefined;

  constructor(readonly entries: readonly KvEntry[]) {}

  entry(key: string): KvEntry | undefined {
    this.byKey ??= new Map(this.entries.map((entry) => [entry.Key, entry]));
    return this.byKey.get(key);
  }

  /** Every entry under `dir` (which ends with "/"). */
  under(dir: string): KvEntry[] {
    return this.entries.filter((entry) => entry.Key.startsWith(dir));
  }
}

/**
 * How many waiters the read lets in: a lock key held by no session, one; a semaphore, its free slots;
 * a read-write lock, every waiter once no holder is left: the watch does not know a waiter's mode, so
 * readers kept out by a writer are woken together when it is gone, as is a writer kept out by readers.
 * Any holder left means no room: a writer kept out by readers must not wake at each reader's change.
 */
export function roomFor(view: SnapshotView, watchKey: string): number {
  if (isSemaphoreDir(watchKey)) {
    const entries = view.under(watchKey);
    if (view.entry(`${watchKey}${SEMAPHORE_LOCK_KEY}`)?.Flags === READ_WRITE_FLAG) {
      return semaphoreState(watchKey, entries, READ_WRITE_FLAG).holders.length === 0 ? Number.POSITIVE_INFINITY : 0;
    }
    return roomIn(semaphoreState(watchKey, entries));
  }
  return view.entry(watchKey)?.Session ? 0 : 1;
}
