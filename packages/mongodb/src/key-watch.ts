import type { LockDocument } from './documents.js';
import type { LockCatalog } from './lock-catalog.js';

/** How often a key is read while a hand-off is likely: during its first second of waiting and after each change. */
export const FAST_WATCH_MS = 10;
const FAST_PHASE_MS = 1_000;
/** Later reads space out by this factor, up to a fifth of the poll interval. */
const BACKOFF = 1.5;

interface Watched {
  /** The document its waiters last saw (null: none). */
  seen: LockDocument | null;
  changedAt: number;
  intervalMs: number;
  dueAt: number;
  /** Waiters leave between their attempts: the pace is kept for a while after the last one left. */
  waitedAt: number;
}

/**
 * Without change streams: while anyone waits, the documents of the keys waited on are read (one
 * cheap read by `_id` per key, never a grant attempt) and the waiters of a key whose document
 * changed are woken. Every 10 ms during a key's first second of waiting and after each change,
 * then less often, up to a fifth of the poll interval: a long wait costs about what the poll did.
 * Nothing is read while nobody waits.
 */
export class KeyWatch {
  private readonly keys = new Map<string, Watched>();
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private stopped = false;
  private readonly slowestMs: number;

  constructor(
    private readonly catalog: LockCatalog,
    /** Wakes every waiter of the key. */
    private readonly wake: (key: string) => void,
    /** Whether anyone still waits on the key. */
    private readonly waited: (key: string) => boolean,
    pollIntervalMs: number,
    private readonly commandTimeoutMs: number,
  ) {
    this.slowestMs = Math.max(FAST_WATCH_MS, pollIntervalMs / 5);
  }

  /** A waiter of `key` saw `holder`: a different view from the other waiters' means a change they missed. */
  watch(key: string, holder: LockDocument | null): void {
    if (this.stopped) return;
    const now = performance.now();
    const known = this.keys.get(key);
    if (!known) this.keys.set(key, { seen: holder, changedAt: now, intervalMs: FAST_WATCH_MS, dueAt: now + FAST_WATCH_MS, waitedAt: now });
    else if (!same(known.seen, holder)) {
      this.wake(key);
      Object.assign(known, { seen: holder, changedAt: now, intervalMs: FAST_WATCH_MS, dueAt: now + FAST_WATCH_MS });
    }
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.reading;
  }

  private schedule(): void {
    if (this.stopped || this.reading) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.keys.size === 0) return;
    const next = Math.min(...[...this.keys.values()].map((watched) => watched.dueAt));
    this.timer = setTimeout(() => this.tick(), Math.max(0, next - performance.now()));
  }

  private tick(): void {
    this.timer = undefined;
    const now = performance.now();
    const due: string[] = [];
    for (const [key, watched] of [...this.keys]) {
      if (this.waited(key)) watched.waitedAt = now;
      else if (now - watched.waitedAt > FAST_PHASE_MS) {
        this.keys.delete(key);
        continue;
      }
      if (watched.dueAt > now) continue;
      if (watched.waitedAt === now) due.push(key);
      else watched.dueAt = now + watched.intervalMs;
    }
    if (due.length === 0) {
      this.schedule();
      return;
    }
    this.reading = this.read(due).finally(() => {
      this.reading = undefined;
      this.schedule();
    });
  }

  private async read(due: string[]): Promise<void> {
    let current: Map<string, LockDocument> | undefined;
    try {
      current = await this.catalog.watchedDocuments(due, { signal: AbortSignal.timeout(this.commandTimeoutMs) });
    } catch {
      // The server did not answer: waiters still retry at the poll interval.
    }
    const now = performance.now();
    for (const key of due) {
      const watched = this.keys.get(key);
      if (!watched) continue;
      const seen = current?.get(key) ?? null;
      if (current && !same(watched.seen, seen)) {
        Object.assign(watched, { seen, changedAt: now, intervalMs: FAST_WATCH_MS });
        this.wake(key);
      } else if (now - watched.changedAt > FAST_PHASE_MS) {
        watched.intervalMs = Math.min(watched.intervalMs * BACKOFF, this.slowestMs);
      }
      watched.dueAt = now + watched.intervalMs;
    }
  }
}

function same(a: LockDocument | null, b: LockDocument | null): boolean {
  if (a === null || b === null) return a === b;
  return a.state === b.state && a.ts.equals(b.ts) && a.version === b.version;
}
