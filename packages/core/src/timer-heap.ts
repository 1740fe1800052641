/** A task the scheduler runs once at `dueAt` (epoch ms) unless cancelled first. */
export interface ScheduledTask {
  readonly run: () => void;
}

interface Entry {
  dueAt: number;
  seq: number;
  task: ScheduledTask;
}

/**
 * Many deadlines, one Node timer: a binary min-heap of due times with a single setTimeout armed
 * for the earliest. Holding 100k locks costs 100k heap entries, not 100k timers.
 */
export class TimerHeap {
  private readonly heap: Entry[] = [];
  private readonly live = new Map<ScheduledTask, number>();
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Infinity;
  private seq = 0;
  private stopped = false;
  private armQueued = false;

  /**
   * The timer never keeps the process alive: what it runs (renewals, expiries) is no reason to keep running.
   * @param armOnNextTick set the Node timer on the next tick rather than at once: a tick queued
   * while promises resolve runs only once they all have, so a task scheduled and cancelled within
   * one run of microtasks (an in-process lock taken and released) never sets or clears a Node timer.
   * Nothing is late for it: no timer could fire before that tick anyway.
   */
  constructor(private readonly armOnNextTick = false) {}

  /** Schedules (or reschedules) `task` to run at `dueAt`. */
  schedule(task: ScheduledTask, dueAt: number): void {
    if (this.stopped) return;
    const seq = ++this.seq;
    this.live.set(task, seq);
    this.push({ dueAt, seq, task });
    if (dueAt >= this.armedFor) return;
    if (!this.armOnNextTick) this.arm();
    else if (!this.armQueued) {
      this.armQueued = true;
      process.nextTick(this.armIfLive);
    }
  }

  cancel(task: ScheduledTask): void {
    this.live.delete(task);
    // Stale heap entries are skipped when popped; with nothing live, leave no timer running.
    if (this.live.size === 0) this.clear();
  }

  get size(): number {
    return this.live.size;
  }

  stop(): void {
    this.stopped = true;
    this.clear();
  }

  private clear(): void {
    // An empty Map's clear() still allocates a new table: most calls come from cancel() of the last task.
    if (this.live.size > 0) this.live.clear();
    this.heap.length = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Infinity;
  }

  private readonly armIfLive = (): void => {
    this.armQueued = false;
    if (this.live.size > 0) this.arm();
  };

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.dropStale();
    const next = this.heap[0];
    if (!next) {
      this.armedFor = Infinity;
      return;
    }
    this.armedFor = next.dueAt;
    this.timer = setTimeout(() => this.fire(), Math.max(0, next.dueAt - Date.now()));
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Infinity;
    const now = Date.now();
    const due: ScheduledTask[] = [];
    for (;;) {
      this.dropStale();
      const top = this.heap[0];
      if (!top || top.dueAt > now) break;
      this.pop();
      this.live.delete(top.task);
      due.push(top.task);
    }
    this.arm();
    for (const task of due) task.run();
  }

  private dropStale(): void {
    for (;;) {
      const top = this.heap[0];
      if (!top || this.live.get(top.task) === top.seq) return;
      this.pop();
    }
  }

  private push(entry: Entry): void {
    const heap = this.heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.dueAt <= entry.dueAt) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = entry;
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop();
    if (!last || heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && heap[right]!.dueAt < heap[left]!.dueAt ? right : left;
      if (heap[child]!.dueAt >= last.dueAt) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }
}
