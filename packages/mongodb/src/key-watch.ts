import { type Bound, bounded } from './bounded.js';
import { LOCKED, type LockDocument, UNLOCKED } from './documents.js';
import type { LockCatalog } from './lock-catalog.js';
import { MAX_LOSSES, WatchPace } from './watch-pace.js';

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
  /** Races for the key that this provider's waiters lost to another holder lately, less those won (0 to MAX_LOSSES). */
  losses: number;
  /** The free state the waiters were last woken for, until one of them reports back. */
  wokeFor: LockDocument | null;
}

/** The poll interval of a contended key's waiters grows at most this many times (the watch wakes them on every change). */
const MAX_PATIENCE = 8;

/**
 * Without change streams: while anyone waits, the documents of the keys waited on are read (one
 * cheap read by `_id` per key, never a grant attempt) and the waiters of a key whose document
 * changed are woken. Every 10 ms (or 2 read latencies, when the server is slower) during a key's
 * first second of waiting and after each change, then less often, up to a fifth of the poll
 * interval: a long wait costs about what the poll did. Nothing is read while nobody waits. Every
 * change wakes the key's waiters at once: a wake-up held back for the providers that lost the last
 * races lets the provider that won keep the key, its next acquire coming before theirs, and starves
 * the others (docs/semantics-mongodb.md; test/contended-fairness.test.ts).
 */
export class KeyWatch {
  private readonly keys = new Map<string, Watched>();
  private readonly pace = new WatchPace();
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private stopped = false;
  /** Aborts the read in flight on stop: its answer would wake nobody, and close() must not wait for it. */
  private readonly stopping = new AbortController();
  /** The last watch read was answered: waiters of a contended key may then retry less often on their own. */
  private answering = false;
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
    this.slowestMs = pollIntervalMs / 5;
  }

  /** A waiter of `key` saw `holder`: a different view from the other waiters' means a change they missed. */
  watch(key: string, holder: LockDocument | null): void {
    if (this.stopped) return;
    const now = performance.now();
    const fastMs = this.pace.fastMs;
    const known = this.keys.get(key);
    if (!known) {
      this.keys.set(key, {
        seen: holder,
        changedAt: now,
        intervalMs: fastMs,
        dueAt: now + fastMs,
        waitedAt: now,
        losses: 0,
        wokeFor: null,
      });
    } else {
      const lost = takenNext(known.wokeFor, holder);
      known.wokeFor = null;
      if (lost) known.losses = Math.min(known.losses + 1, MAX_LOSSES);
      if (!same(known.seen, holder)) {
        // Taken by another provider right after the release these waiters were woken for: the others would only lose too.
        if (!lost) this.wake(key);
        Object.assign(known, { seen: holder, changedAt: now, intervalMs: fastMs, dueAt: now + fastMs });
      }
    }
    this.schedule();
  }

  /** A waiter of this provider was granted the key: the release it was woken for was not lost to another provider. */
  granted(key: string): void {
    const watched = this.keys.get(key);
    if (!watched) return;
    watched.wokeFor = null;
    watched.losses = Math.max(0, watched.losses - 1);
  }

  /**
   * How many poll intervals a waiter of `key` may wait before it retries on its own: 1, or while the
   * watch reads the key and its waiters keep losing it to other providers, up to MAX_PATIENCE (the
   * watch wakes them on every change, so their own retries would only add load on a contended key).
   */
  patience(key: string): number {
    const losses = this.keys.get(key)?.losses ?? 0;
    return this.answering ? Math.min(2 ** losses, MAX_PATIENCE) : 1;
  }

  /** Ends the read in flight at once; waits for it to settle, but never past `bound` (close's deadline). */
  async stop(bound: Bound): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stopping.abort();
    if (this.reading) await bounded(bound, this.reading);
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
    const seen = new Map(due.map((key) => [key, this.keys.get(key)?.seen ?? null]));
    let current: Map<string, LockDocument> | undefined;
    const startedAt = performance.now();
    try {
      current = await this.catalog.watchedDocuments(
        due,
        { signal: AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.commandTimeoutMs)]) },
        seen,
      );
      this.pace.took(performance.now() - startedAt);
      this.answering = true;
    } catch {
      // The server did not answer: waiters retry at the poll interval.
      this.answering = false;
    }
    const now = performance.now();
    for (const key of due) {
      const watched = this.keys.get(key);
      if (!watched) continue;
      this.settle(key, watched, current && (current.get(key) ?? null), now);
    }
  }

  /** What one read of a watched key means for its waiters; `latest` is undefined when the read failed. */
  private settle(key: string, watched: Watched, latest: LockDocument | null | undefined, now: number): void {
    const fastMs = this.pace.fastMs;
    if (latest !== undefined && !same(watched.seen, latest)) {
      Object.assign(watched, { seen: latest, changedAt: now, intervalMs: fastMs, dueAt: now + fastMs });
      this.wakeFor(key, watched, latest);
      return;
    }
    if (now - watched.changedAt > FAST_PHASE_MS) {
      watched.intervalMs = Math.max(fastMs, Math.min(watched.intervalMs * BACKOFF, this.slowestMs));
    }
    watched.dueAt = now + watched.intervalMs;
  }

  private wakeFor(key: string, watched: Watched, latest: LockDocument | null): void {
    watched.wokeFor = latest?.state === UNLOCKED ? latest : null;
    this.wake(key);
  }
}

function same(a: LockDocument | null, b: LockDocument | null): boolean {
  if (a === null || b === null) return a === b;
  return a.state === b.state && a.ts.equals(b.ts) && a.version === b.version;
}

/**
 * A version after the free one the waiters were woken for is held by another holder: another
 * provider's attempt won that release (a grant to a waiter of this provider clears `wokeFor`; on
 * mongod, whose documents carry no version, this is never counted).
 */
function takenNext(wokeFor: LockDocument | null, holder: LockDocument | null): boolean {
  return wokeFor?.version !== undefined && holder?.state === LOCKED && (holder.version ?? 0) > wokeFor.version;
}
