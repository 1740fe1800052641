import { WaitList, type WaitOptions } from '@holdfast/core/backend';
import type { ConsulHttp } from './consul-http.js';
import { readEntries } from './kv.js';
import { type Monitored, Watch, type WatchPolicy } from './watch.js';

/**
 * ONE consistent blocking query over the provider's whole key prefix (`?recurse`) serves every lock
 * the provider holds (monitor) and every acquire it has waiting (wake-up). Per-key blocking queries
 * would hold one HTTP connection per lock and per waiter, and Consul caps concurrent HTTP
 * connections per client address (limits.http_max_conns_per_client, default 200): 10k held locks
 * would not even fit. The price: each change under the prefix re-reads the prefix (every entry
 * under it), so a busy prefix with many keys makes every wake-up heavier.
 */
export class Watches {
  private readonly waiters = new WaitList<string>();
  private readonly prefixWatch: Watch;

  constructor(http: ConsulHttp, prefix: string, policy: WatchPolicy) {
    const readPrefix = (index: bigint, waitMs: number, signal: AbortSignal) =>
      readEntries(http, `${prefix}/`, { recurse: true, consistent: true, index, waitMs, signal });
    this.prefixWatch = new Watch(readPrefix, this.waiters, policy);
  }

  /** Tells `grant` when its key no longer holds it, until unmonitor(). */
  monitor(grant: Monitored): void {
    this.prefixWatch.monitor(grant);
  }

  unmonitor(grant: Monitored): void {
    this.prefixWatch.unmonitor(grant);
  }

  /** Resolves once a read newer than `since` (the index the key was seen busy at) shows it free, or on timeout/abort. */
  async waitUntilFree(consulKey: string, since: bigint, options: WaitOptions): Promise<void> {
    if (this.prefixWatch.addWaiter(consulKey, since)) return;
    try {
      await this.waiters.wait(consulKey, options);
    } finally {
      this.prefixWatch.forgetIfUnused(consulKey);
    }
  }

  close(): void {
    this.prefixWatch.close();
  }
}
