import { SweepClock } from './sweep-clock.js';

/** What a forced release of a semaphore key publishes: this prefix, then the freed lockIds, space-separated. */
const SLOTS_FORCED = 'force-released ';

/** The lockIds a release message says were forcibly freed, or undefined (a plain release, a plain lock's forced release). */
export function forcedSlotsIn(message: string): readonly string[] | undefined {
  return message.startsWith(SLOTS_FORCED) ? message.slice(SLOTS_FORCED.length).split(' ') : undefined;
}

/** A held slot that wants to hear when a forced release of its key frees it. */
export interface SlotWatcher {
  readonly lockId: string;
  /** Local end of the lease; a watcher past it that was never released is dropped at a sweep. */
  readonly leaseEnd: number;
  forceReleased(): void;
}

/**
 * The provider's held slots, per key, told when a forced release of their key names them (the
 * message comes through the provider's one subscription). No timer per slot: slots that lapsed
 * without a release are dropped by a sweep, as a session drops its voters. A message sent while the
 * subscription was down is missed; the holder's next renewal finds its slot gone instead.
 */
export class ForcedReleases {
  private readonly byKey = new Map<string, Set<SlotWatcher>>();
  private readonly sweeps = new SweepClock();

  watch(key: string, watcher: SlotWatcher): void {
    this.sweep();
    let watchers = this.byKey.get(key);
    if (!watchers) this.byKey.set(key, (watchers = new Set()));
    watchers.add(watcher);
  }

  unwatch(key: string, watcher: SlotWatcher): void {
    const watchers = this.byKey.get(key);
    if (watchers?.delete(watcher) && watchers.size === 0) this.byKey.delete(key);
  }

  told(key: string, lockIds: readonly string[]): void {
    const watchers = this.byKey.get(key);
    if (!watchers) return;
    const freed = new Set(lockIds);
    for (const watcher of [...watchers]) {
      if (!freed.has(watcher.lockId)) continue;
      this.unwatch(key, watcher);
      watcher.forceReleased();
    }
  }

  close(): void {
    this.byKey.clear();
  }

  private sweep(): void {
    const now = this.sweeps.due();
    if (now === undefined) return;
    for (const [key, watchers] of [...this.byKey]) for (const watcher of watchers) if (watcher.leaseEnd < now) this.unwatch(key, watcher);
  }
}
