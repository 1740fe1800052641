/** A call core stops waiting for at `dueAt` (on `performance.now()`'s monotonic clock). */
export interface Expiring {
  readonly dueAt: number;
  expire(): void;
}

/**
 * The deadlines of a provider's backend calls, on one Node timer armed for the earliest. Calls
 * come one after the other with deadlines that mostly grow (each call's per-call timeout, an
 * acquire's attempts bounded by its waitMs): a new call due no earlier than the armed time costs no
 * timer at all, and a call that settles leaves a Set in O(1). Only a call due before the armed time
 * sets the timer again. When the last pending call settles the timer stays, unref'd (it keeps no
 * process alive), until it fires or `close()`; when it fires it expires the calls due and re-arms
 * for the earliest still pending. Calls one after the other (a grant, then its release) then cost
 * no setTimeout and clearTimeout each, a large share of a grant's client CPU (docs/performance.md).
 *
 * The timer is armed on the next tick, not at once: a tick queued while promises resolve runs only
 * once they all have, so a call that settles in the same run of microtasks (an in-process backend)
 * never costs a timer. No timer can fire before that tick, so every call still gives up at its own
 * `dueAt`. Finding the earliest scans the pending calls, at most once a tick and only when an
 * earlier deadline came; TimerHeap serves the many deadlines of held locks (renewals).
 */
export class CallDeadlines {
  private readonly pending = new Set<Expiring>();
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (performance.now()); Infinity while there is none. */
  private armedFor = Infinity;
  private armQueued = false;
  /** Until close(), the timer outlives the last pending call (unref'd). */
  private keepIdleTimer = true;

  add(entry: Expiring): void {
    this.pending.add(entry);
    if (this.timer && this.armedFor <= entry.dueAt) {
      // A timer kept from earlier calls fires no later than this call's deadline.
      if (this.pending.size === 1) this.timer.ref();
      return;
    }
    if (this.armQueued) return;
    this.armQueued = true;
    process.nextTick(this.armForEarliest);
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
    this.armedFor = Infinity;
  }

  private readonly armForEarliest = (): void => {
    this.armQueued = false;
    let earliest = Infinity;
    for (const entry of this.pending) if (entry.dueAt < earliest) earliest = entry.dueAt;
    if (earliest === Infinity) return;
    if (this.timer && this.armedFor <= earliest) this.timer.ref();
    else this.arm(earliest);
  };

  private readonly fire = (): void => {
    this.timer = undefined;
    this.armedFor = Infinity;
    const now = performance.now();
    const due: Expiring[] = [];
    for (const entry of this.pending) if (entry.dueAt <= now) due.push(entry);
    for (const entry of due) {
      this.pending.delete(entry);
      entry.expire();
    }
    // expire() may have started calls of its own (an undo); they are pending like the rest.
    this.armForEarliest();
  };

  private arm(dueAt: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = dueAt;
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(dueAt - performance.now())));
  }
}
