import { WaitList, type WaitOptions } from '@holdfast/core/backend';
import type { ConsulHttp } from './consul-http.js';
import { readEntries } from './kv.js';
import { isSemaphoreDir } from './semaphore-record.js';
import { type Monitored, Watch, type WatchPolicy } from './watch.js';

/**
 * Keys of one provider watched by a blocking query of their own (one per key, shared by the key's
 * grants and all of the provider's waiters on it; a semaphore's query reads its whole directory, as
 * Go's does, since a dead holder shows only as its contender entry gone). Each holds a connection for up to 15 s, and Consul
 * refuses more than 200 connections per client address (limits.http_max_conns_per_client) to all
 * the processes of a host together: a provider keeps a quarter of its 64 sockets for them.
 */
const MAX_KEY_WATCHES = 16;
/**
 * Keys beyond that share one query over the whole prefix. Any change under the prefix answers it with
 * every entry there, so while nobody waits on its keys (it only watches held locks) it reads at most
 * this often: a holder of 10,000 locks stays idle while other providers work in the same prefix.
 */
const PREFIX_REST_MS = 5000;

/**
 * What the provider watches, and with which query: the Go client watches each lock and each wait with
 * a query of its own; the same here for the first keys, one shared prefix query beyond (see above).
 */
export class Watches {
  private readonly waiters = new WaitList<string>();
  /** Per-key watches, including idle ones whose last query has not answered yet. */
  private readonly byKey = new Map<string, Watch>();
  private readonly prefixWatch: Watch;

  constructor(
    private readonly http: ConsulHttp,
    prefix: string,
    private readonly policy: WatchPolicy,
  ) {
    const readPrefix = (index: bigint, waitMs: number, signal: AbortSignal) =>
      readEntries(http, `${prefix}/`, { recurse: true, consistent: true, index, waitMs, signal });
    this.prefixWatch = new Watch(readPrefix, this.waiters, policy, PREFIX_REST_MS, 0n, () => undefined);
  }

  /** Tells `grant` when its key no longer holds it, until unmonitor(). */
  monitor(grant: Monitored): void {
    this.watchOf(grant.watchKey, grant.modifyIndex).monitor(grant);
  }

  unmonitor(grant: Monitored): void {
    this.existingWatchOf(grant.watchKey)?.unmonitor(grant);
  }

  /**
   * Resolves once a read newer than `since` (the index the key was seen busy at) shows room (the lock
   * key free, a slot of the semaphore directory `watchKey` free), or on timeout/abort.
   */
  async waitUntilFree(watchKey: string, since: bigint, options: WaitOptions): Promise<void> {
    const watch = this.watchOf(watchKey, since);
    if (watch.addWaiter(watchKey, since)) return;
    try {
      await this.waiters.wait(watchKey, options);
    } finally {
      watch.forgetIfUnused(watchKey);
    }
  }

  close(): void {
    this.prefixWatch.close();
    for (const watch of this.byKey.values()) watch.close();
    this.byKey.clear();
  }

  private existingWatchOf(watchKey: string): Watch | undefined {
    return this.byKey.get(watchKey) ?? (this.prefixWatch.has(watchKey) ? this.prefixWatch : undefined);
  }

  /** The key's watch; a new per-key one starts blocking at `index`, what the caller last saw of the key. */
  private watchOf(watchKey: string, index: bigint): Watch {
    const existing = this.existingWatchOf(watchKey);
    if (existing) return existing;
    if (this.byKey.size >= MAX_KEY_WATCHES) return this.prefixWatch;
    const recurse = isSemaphoreDir(watchKey);
    const readKey = (from: bigint, waitMs: number, signal: AbortSignal) =>
      readEntries(this.http, watchKey, { recurse, consistent: true, index: from, waitMs, signal });
    const watch: Watch = new Watch(readKey, this.waiters, this.policy, 0, index, () => {
      if (this.byKey.get(watchKey) === watch) this.byKey.delete(watchKey);
    });
    this.byKey.set(watchKey, watch);
    return watch;
  }
}
