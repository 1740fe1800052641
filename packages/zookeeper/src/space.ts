import { keyNode } from './node-names.js';
import type { ZkSession } from './session.js';
import type { Watches } from './watches.js';
import type { ZkCalls } from './zk-calls.js';

/** Where a provider's keys live (`<root>/<encoded key>/<contenders>`) and what every operation shares. */
export class ZkSpace {
  constructor(
    readonly calls: ZkCalls,
    readonly session: ZkSession,
    readonly watches: Watches,
    /** The znode every key lives under, e.g. `/holdfast` (inside the URL's chroot). */
    readonly root: string,
    /** The bound of clean-ups nobody waits for. */
    readonly background: () => AbortSignal,
  ) {}

  keyPath(key: string): string {
    return `${this.root}/${keyNode(key)}`;
  }

  /**
   * Removes a key's znode once nobody contends (ZooKeeper refuses while it has children): keys do
   * not pile up. A contender that finds it gone creates it again; tokens (czxid) keep increasing.
   */
  async removeKeyIfIdle(dir: string): Promise<void> {
    await this.calls.remove(dir, -1, this.background()).catch(() => undefined);
  }
}
