import { sleep } from '@holdfast/core/backend';
import { ConsulHttpError, type ConsulHttp } from './consul-http.js';
import { type KvEntry, readPrefixBlocking } from './kv.js';
import { type GrantProof, provesGrant } from './ownership.js';

/** A held lock the watch monitors, like the Go client's monitorLock. */
export interface Monitored extends GrantProof {
  /** The grant's ModifyIndex: snapshots older than this do not know about the grant yet. */
  readonly token: bigint;
  readonly onLost: (detail: string, cause?: unknown) => void;
}

interface Waiter {
  readonly consulKey: string;
  /** The key's index when it was seen busy: only a newer snapshot can say it became free. */
  readonly busySince: bigint;
  readonly wake: () => void;
}

export interface WatchRetryPolicy {
  readonly retries: number;
  readonly retryMs: number;
}

/**
 * ONE consistent blocking query over the provider's whole key prefix (`?recurse`) serves every lock
 * the provider holds (monitor) and every acquire it has waiting (wake-up). Per-key blocking queries
 * would hold one HTTP connection per lock and per waiter, and Consul caps concurrent HTTP
 * connections per client address (limits.http_max_conns_per_client, default 200): 10k held locks
 * would not even fit. The price: each change under the prefix re-reads the prefix (every entry
 * under it), so a busy prefix with many keys makes every wake-up heavier. Runs only while
 * something is monitored or waiting.
 */
export class PrefixWatch {
  /** Held locks -> number of reads started before monitoring began: later reads know the grant. */
  private readonly monitored = new Map<Monitored, number>();
  private readsStarted = 0;
  /** The highest index any snapshot had: a lower one means the server's state was reset. */
  private highestIndex = 0n;
  private readonly waiters = new Set<Waiter>();
  private running: AbortController | undefined;
  private index = 0n;
  private closed = false;

  constructor(
    private readonly http: ConsulHttp,
    private readonly prefix: string,
    private readonly retry: WatchRetryPolicy,
    /** Sees every snapshot's entries, after held locks and waiters were checked. */
    private readonly onSnapshot: (entries: readonly KvEntry[]) => void = () => undefined,
  ) {}

  monitor(entry: Monitored): void {
    this.monitored.set(entry, this.readsStarted);
    this.ensureRunning();
  }

  unmonitor(entry: Monitored): void {
    this.monitored.delete(entry);
  }

  /** Resolves once a snapshot newer than `busySince` shows the key free, or on timeout/abort. */
  waitUntilFree(consulKey: string, busySince: bigint, options: { signal: AbortSignal; timeoutMs: number }): Promise<void> {
    return new Promise((resolve) => {
      if (options.signal.aborted) return resolve();
      const done = (): void => {
        clearTimeout(timer);
        options.signal.removeEventListener('abort', done);
        this.waiters.delete(waiter);
        resolve();
      };
      const waiter: Waiter = { consulKey, busySince, wake: done };
      const timer = setTimeout(done, options.timeoutMs);
      options.signal.addEventListener('abort', done, { once: true });
      this.waiters.add(waiter);
      this.ensureRunning();
    });
  }

  close(): void {
    this.closed = true;
    this.running?.abort();
    this.running = undefined;
  }

  private ensureRunning(): void {
    if (this.running || this.closed) return;
    const controller = new AbortController();
    this.running = controller;
    void this.loop(controller.signal).finally(() => {
      if (this.running === controller) this.running = undefined;
      // Interest that arrived while the loop was winding down needs a new loop.
      if (!this.idle) this.ensureRunning();
    });
  }

  /**
   * Once idle, the in-flight blocking query is left to finish (the loop then ends) rather than
   * aborted: an aborted request costs its keep-alive socket, and the next lock would need it again.
   */
  private get idle(): boolean {
    return this.monitored.size === 0 && this.waiters.size === 0;
  }

  private async loop(signal: AbortSignal): Promise<void> {
    let retriesLeft = this.retry.retries;
    while (!signal.aborted && !this.idle) {
      try {
        const readNumber = ++this.readsStarted;
        const snapshot = await readPrefixBlocking(this.http, `${this.prefix}/`, this.index, signal);
        // A smaller index means the state was reset (restore, new leader without data): start over.
        this.index = snapshot.index < this.index ? 0n : snapshot.index;
        const reset = snapshot.index < this.highestIndex ? `Consul's index went back from ${this.highestIndex} to ${snapshot.index}: its state was reset (restart without data?)` : undefined;
        if (snapshot.index > this.highestIndex || reset) this.highestIndex = snapshot.index;
        retriesLeft = this.retry.retries;
        this.apply(snapshot.entries, snapshot.index, readNumber, reset);
      } catch (error) {
        if (signal.aborted) return;
        const retryable = !(error instanceof ConsulHttpError) || error.retryable;
        if (retryable && retriesLeft > 0) {
          retriesLeft--;
        } else {
          this.loseAll(error);
          // Waiting acquires ride out transient failures (an election); other errors are theirs to see.
          if (!retryable) this.wakeAll();
          if (this.waiters.size === 0) return;
        }
        this.index = 0n;
        await sleep(this.retry.retryMs, signal).catch(() => undefined);
      }
    }
  }

  /**
   * A snapshot speaks for a held lock if its read started after the grant was made (consistent reads
   * are linearizable), or if its index covers the grant's write. Not "index >= token" alone: after a
   * reset the server's indexes start again below every token it gave before.
   */
  private apply(entries: KvEntry[], index: bigint, readNumber: number, reset: string | undefined): void {
    const byKey = new Map<string, KvEntry>();
    for (const entry of entries) byKey.set(entry.Key, entry);
    for (const [held, since] of [...this.monitored]) {
      if (readNumber <= since && held.token > index) continue;
      const entry = byKey.get(held.consulKey);
      if (provesGrant(entry, held)) continue;
      const what = !entry
        ? 'the key was deleted'
        : entry.Session === held.session
          ? 'the key was taken again or overwritten (a newer grant or write on the same session)'
          : entry.Session
            ? 'the key is held by another session'
            : 'the key was released (session invalidated or released externally)';
      // Read after the grant, yet below its index: the server forgot its history.
      const note = reset ?? (index < held.token ? `Consul's index ${index} is below this grant's ${held.token}: its state was reset (restart without data?)` : undefined);
      this.lose(held, note ? `${what}; ${note}` : what);
    }
    for (const waiter of [...this.waiters]) {
      if (index < waiter.busySince) continue;
      const entry = byKey.get(waiter.consulKey);
      if (!entry || !entry.Session) waiter.wake();
    }
    this.onSnapshot(entries);
  }

  private lose(held: Monitored, detail: string, cause?: unknown): void {
    this.monitored.delete(held);
    held.onLost(detail, cause);
  }

  /** The monitor gave up: like the Go client, every monitored lock is then lost. */
  private loseAll(error: unknown): void {
    for (const held of [...this.monitored.keys()]) this.lose(held, 'the lock monitor failed', error);
  }

  private wakeAll(): void {
    for (const waiter of [...this.waiters]) waiter.wake();
  }
}
