/** A call core stops waiting for at `dueAt` (on `performance.now()`'s monotonic clock). */
export interface Expiring {
  readonly dueAt: number;
  expire(): void;
}

/**
 * The deadlines of calls that share one budget (the per-call timeout), on one Node timer. Calls of
 * one budget fall due in the order they started, so a FIFO does what a heap would: a call that
 * settles leaves it in O(1), and the timer, armed for the oldest pending call, is set again only
 * when it fires. When the last pending call settles the timer stays, unref'd (it keeps no process
 * alive), until it fires or `close()`: a later call's deadline is later than the one it is armed for,
 * so it still fires in time, then re-arms for the oldest call pending. Calls one after the other
 * (a grant, then its release) then cost no setTimeout and clearTimeout each, a large share of a
 * grant's client CPU (docs/performance.md).
 *
 * The timer is armed on the next tick, not at once: a tick queued while promises resolve runs only
 * once they all have, so a call that settles in the same run of microtasks (an in-process backend)
 * never costs a timer. No timer can fire before that tick, so every call still gives up at its own
 * `dueAt`. TimerHeap serves deadlines of different lengths (renewals); this lane is its O(1) case
 * for one length.
 */
export class DeadlineLane {
  private readonly pending = new Set<Expiring>();
  private timer: NodeJS.Timeout | undefined;
  private armQueued = false;
  /** Until close(), the timer outlives the last pending call (unref'd). */
  private keepIdleTimer = true;

  constructor(readonly budgetMs: number) {}

  /** `entry.dueAt` must be `performance.now() + budgetMs`, taken now. */
  add(entry: Expiring): void {
    this.pending.add(entry);
    if (this.timer) {
      // An idle timer kept from earlier calls: it fires no later than this call's deadline.
      if (this.pending.size === 1) this.timer.ref();
      return;
    }
    if (this.armQueued) return;
    this.armQueued = true;
    process.nextTick(this.armForOldest);
  }

  delete(entry: Expiring): void {
    if (!this.pending.delete(entry) || this.pending.size > 0 || !this.timer) return;
    if (this.keepIdleTimer) this.timer.unref();
    else this.clear();
  }

  /** From now on the timer is cleared as soon as no call is pending (a closed provider leaves no timer). */
  close(): void {
    this.keepIdleTimer = false;
    if (this.pending.size === 0) this.clear();
  }

  private clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private readonly armForOldest = (): void => {
    this.armQueued = false;
    const oldest = this.pending.values().next();
    if (!oldest.done && !this.timer) this.arm(oldest.value.dueAt - performance.now());
  };

  private readonly fire = (): void => {
    this.timer = undefined;
    const now = performance.now();
    for (const entry of this.pending) {
      if (entry.dueAt > now) {
        this.arm(entry.dueAt - now);
        return;
      }
      this.pending.delete(entry);
      entry.expire();
    }
  };

  private arm(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(ms)));
  }
}
