import { pause, sleep, WaitList, type WaitOptions } from '@holdfast/core/backend';
import { boundedCall } from './bounded-call.js';

/**
 * A key's holder as one look saw it: its token (unique per grant; a semaphore's newest), its lease
 * left by the server's clock (a semaphore's first slot to end), and whether no slot is left (always
 * for a plain lock).
 */
export interface Holder {
  readonly token: bigint;
  readonly remainingMs: number;
  readonly full: boolean;
}

/** The first look at a watched key comes this soon; each next one twice as late, up to the poll interval. */
const FIRST_LOOK_MS = 10;

/**
 * Wake-ups by polling, since MySQL has nothing like LISTEN/NOTIFY: one poll per watched key per
 * provider, whatever the number of its waiters, reading just that key's row. Waiters are woken when
 * the key is seen free (a semaphore with a free slot) or held by another grant than before (a
 * release followed at once by the next grant is a change too). Looks come quickly after a wait starts, since most locks are held
 * briefly, then back off to `pollIntervalMs`; a lease about to run out is looked at right after its
 * end. A failed look wakes the waiters too, so that their next attempt reports the failure.
 */
export class KeyWatch {
  private readonly waiters = new WaitList<string>();
  /** Per watched key: the holder its last look saw (undefined before the first). */
  private readonly watched = new Map<string, { seen: Holder | null | undefined }>();
  private readonly stopped = new AbortController();

  constructor(
    private readonly look: (key: string, signal: AbortSignal) => Promise<Holder | null>,
    private readonly pollIntervalMs: number,
  ) {}

  /** Until `key` changes from `seen` (the holder the caller last saw, when known), or the wait's timeout or abort. */
  async wait(key: string, seen: Holder | undefined, options: WaitOptions): Promise<void> {
    // A semaphore with a free slot whose grant lost a race: try again shortly.
    if (seen && !seen.full) return pause(Math.min(FIRST_LOOK_MS, options.timeoutMs), options.signal);
    const watch = this.watched.get(key);
    // The poll already saw a later grant than the caller did (tokens rise): the key changed since.
    if (seen && watch?.seen && watch.seen.token > seen.token) return;
    const woken = this.waiters.wait(key, options);
    if (!watch) void this.poll(key, { seen });
    await woken;
  }

  /** Stops every poll and its timer. */
  close(): void {
    this.stopped.abort();
    this.waiters.wakeEveryone(undefined);
  }

  private async poll(key: string, watch: { seen: Holder | null | undefined }): Promise<void> {
    this.watched.set(key, watch);
    try {
      for (let interval = FIRST_LOOK_MS; this.waiters.has(key); interval = Math.min(2 * interval, this.pollIntervalMs)) {
        // Unknown holder: look at once. +1 ms: a lease is over once the server's clock passed its end.
        const untilExpiry = watch.seen === undefined ? 0 : watch.seen === null ? Infinity : Math.max(0, watch.seen.remainingMs) + 1;
        await sleep(Math.min(interval, untilExpiry), this.stopped.signal);
        if (!this.waiters.has(key)) return;
        const before = watch.seen;
        const now = await this.bounded(key);
        watch.seen = now === 'failed' ? null : now;
        const changed = now === null || now === 'failed' || !now.full || (before !== undefined && before?.token !== now.token);
        if (changed) this.waiters.wakeAll(key, undefined);
      }
    } catch {
      // Stopped by close().
    } finally {
      this.watched.delete(key);
    }
  }

  /** One look, bounded like any backend call; throws only when stopped. */
  private bounded(key: string): Promise<Holder | null | 'failed'> {
    return boundedCall(this.stopped.signal, (signal) => this.look(key, signal)).catch((error: unknown) => {
      if (this.stopped.signal.aborted) throw error;
      return 'failed' as const;
    });
  }
}
