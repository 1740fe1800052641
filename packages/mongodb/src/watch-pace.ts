/** How often a key is read while a hand-off is likely, at the least: during its first second of waiting and after each change. */
export const FAST_WATCH_MS = 10;
/** A watch waits at least this many times its last reads' latency between reads: a busy server is not read faster than it answers. */
const LATENCY_FACTOR = 2;
/** Weight of the latest read in the latency average. */
const LATENCY_WEIGHT = 0.3;
/** Lost races a key's watch counts at most (what a waiter's patience is derived from). */
export const MAX_LOSSES = 6;

/**
 * The pace of one provider's key watch, from what the server's answers cost. Many providers waiting
 * on one server each read their keys; reading every 10 ms whatever the latency lets their reads
 * alone fill the server (docs/semantics-mongodb.md, many providers on one key). Every wait is still
 * bounded by the waiter's poll interval, so a slow watch only costs latency.
 */
export class WatchPace {
  private latencyMs = 0;

  /** Records how long a batch of watch reads took. */
  took(ms: number): void {
    this.latencyMs = this.latencyMs === 0 ? ms : this.latencyMs + LATENCY_WEIGHT * (ms - this.latencyMs);
  }

  /** The shortest interval between reads of a key. */
  get fastMs(): number {
    return Math.max(FAST_WATCH_MS, LATENCY_FACTOR * this.latencyMs);
  }
}
