import type { KvEntry } from './kv.js';
import { isSemaphoreDir, roomIn, semaphoreState } from './semaphore-record.js';

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

/** How many waiters the read lets in: a lock key held by no session, one; a semaphore, its free slots. */
export function roomFor(view: SnapshotView, watchKey: string): number {
  if (isSemaphoreDir(watchKey)) return roomIn(semaphoreState(watchKey, view.under(watchKey)));
  return view.entry(watchKey)?.Session ? 0 : 1;
}
