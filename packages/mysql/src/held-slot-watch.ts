import { pause } from '@holdfast/core/backend';
import { boundedCall } from './bounded-call.js';

interface Watched {
  readonly key: string;
  readonly lockId: string;
  readonly onGone: () => void;
}

/** Keys per look: a statement of a few dozen KB at most. */
const KEYS_PER_LOOK = 500;

/**
 * Tells the holders of semaphore slots that their slot is gone (force-released, or lapsed) within a
 * poll interval, as MySQL cannot push it: while the provider holds slots, one read per interval
 * lists the live slots of all their keys, and a slot not among them is gone for good (a lapsed slot
 * is never revived). Only slots registered before a read was sent are judged by it. A failed read
 * judges nothing: the renewal finds out in its own time.
 */
export class HeldSlotWatch {
  private readonly watched = new Set<Watched>();
  private readonly stopped = new AbortController();
  private running = false;

  constructor(
    private readonly liveSlots: (keys: readonly string[], signal: AbortSignal) => Promise<Map<string, Set<string>>>,
    private readonly intervalMs: number,
  ) {}

  /** Watches one slot until it is gone or the returned function is called. */
  watch(key: string, lockId: string, onGone: () => void): () => void {
    const entry: Watched = { key, lockId, onGone };
    this.watched.add(entry);
    if (!this.running) void this.poll();
    return () => this.watched.delete(entry);
  }

  close(): void {
    this.stopped.abort();
    this.watched.clear();
  }

  private async poll(): Promise<void> {
    this.running = true;
    try {
      while (this.watched.size > 0 && !this.stopped.signal.aborted) {
        await pause(this.intervalMs, this.stopped.signal, false);
        const judged = [...this.watched];
        for (let i = 0; i < judged.length; i += KEYS_PER_LOOK) await this.judge(judged.slice(i, i + KEYS_PER_LOOK));
      }
    } finally {
      this.running = false;
    }
  }

  private async judge(entries: readonly Watched[]): Promise<void> {
    const keys = [...new Set(entries.map((entry) => entry.key))];
    const live = await boundedCall(this.stopped.signal, (signal) => this.liveSlots(keys, signal)).catch(() => null);
    if (!live) return;
    for (const entry of entries) {
      if (!this.watched.has(entry) || live.get(entry.key)?.has(entry.lockId)) continue;
      this.watched.delete(entry);
      entry.onGone();
    }
  }
}
