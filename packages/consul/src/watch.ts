import { linkedController, sleep, type WaitList } from '@holdfast/core/backend';
import { BLOCKING_WAIT_MS } from './constants.js';
import { ConsulHttpError } from './consul-http.js';
import type { KvEntry, KvSnapshot } from './kv.js';
import { type GrantProof, provesGrant } from './ownership.js';

/** A held grant as a watch sees it (the Go client's monitorLock): the proof of its write, and how to tell it it is gone. */
export interface Monitored extends GrantProof {
  readonly modifyIndex: bigint;
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
  /** Index of the last read, if it showed the key free (absent or held by no session). */
  freeAt: bigint | undefined;
}

/**
 * One blocking-query loop over some keys of one provider: it tells the provider's grants of those keys
 * when they are gone and wakes the provider's waiters when a key is free. `read` decides what one
 * query covers (one key, or the whole prefix). Runs while some key has a grant or a waiter.
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

  has(consulKey: string): boolean {
    return this.keys.has(consulKey);
  }

  monitor(grant: Monitored): void {
    this.watched(grant.consulKey).grants.set(grant, this.readsStarted);
    this.start();
  }

  unmonitor(grant: Monitored): void {
    this.keys.get(grant.consulKey)?.grants.delete(grant);
    this.forgetIfUnused(grant.consulKey);
  }

  /** Registers interest for a waiter that saw the key busy at `since`; true if a read already showed it free since. */
  addWaiter(consulKey: string, since: bigint): boolean {
    const { freeAt } = this.watched(consulKey);
    this.start();
    this.resting?.abort();
    return freeAt !== undefined && freeAt >= since;
  }

  /** Drops the key once neither a grant nor a waiter needs it. */
  forgetIfUnused(consulKey: string): void {
    const watched = this.keys.get(consulKey);
    if (watched && watched.grants.size === 0 && !this.waiters.has(consulKey)) this.keys.delete(consulKey);
  }

  close(): void {
    this.closed = true;
    this.running?.abort();
  }

  private watched(consulKey: string): WatchedKey {
    let watched = this.keys.get(consulKey);
    if (!watched) this.keys.set(consulKey, (watched = { grants: new Map(), freeAt: undefined }));
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
          if (!retryable) for (const consulKey of [...this.keys.keys()]) this.waiters.wakeAll(consulKey, undefined);
        }
        this.index = 0n;
        await sleep(this.policy.retryMs, signal).catch(() => undefined);
      }
    }
  }

  private apply(entries: KvEntry[], index: bigint, readNumber: number, reset: string | undefined): void {
    const byKey = new Map(entries.map((entry) => [entry.Key, entry]));
    let handingOff = false;
    for (const [consulKey, watched] of [...this.keys]) {
      const entry = byKey.get(consulKey);
      this.judge(watched, entry, index, readNumber, reset);
      watched.freeAt = entry?.Session ? undefined : index;
      // One waiter per free key: the provider's waiters take turns instead of all racing for it.
      if (watched.freeAt !== undefined && this.waiters.wakeFirst(consulKey, () => undefined)) handingOff ||= this.waiters.has(consulKey);
    }
    this.handingOff = handingOff;
  }

  /**
   * A read speaks for a grant if it started after the grant was monitored (consistent reads are
   * linearizable), or if its index covers the grant's write. Not the index alone: after a reset the
   * server's indexes start again below every index it gave before.
   */
  private judge(watched: WatchedKey, entry: KvEntry | undefined, index: bigint, readNumber: number, reset: string | undefined): void {
    for (const [grant, since] of [...watched.grants]) {
      if (readNumber <= since && index < grant.modifyIndex) continue;
      if (provesGrant(entry, grant)) continue;
      const what = !entry
        ? 'the key was deleted'
        : entry.Session === grant.sessionId
          ? 'the key was taken again or overwritten (a newer grant or write on the same session)'
          : entry.Session
            ? 'the key is held by another session'
            : 'the key was released (session invalidated or released externally)';
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
    for (const consulKey of this.waiters.keys()) if (this.keys.has(consulKey)) return true;
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
