import { trackTimers } from './timer-tracker.js';

/**
 * Timers as they were before the target's first provider existed, so that a timer started along
 * with the first provider (a module-level sweeper, a shared pool) and never stopped counts as a leak.
 */
export class LeakBaseline {
  private tracker: ReturnType<typeof trackTimers> | undefined;
  private refTimers = 0;
  private handles = new Map<string, number>();

  start(): void {
    this.refTimers = activeRefTimers();
    this.handles = activeHandles();
    this.tracker = trackTimers();
  }

  stop(): void {
    this.tracker?.stop();
    this.tracker = undefined;
  }

  /** Timers created since start() and still pending, with where they were created. */
  pending(): string[] {
    return this.tracker?.pending() ?? [];
  }

  /** Ref'd timers beyond the baseline (also those the tracker cannot see, e.g. created before it by a captured setTimeout). */
  extraRefTimers(): number {
    return activeRefTimers() - this.refTimers;
  }

  /** Network handles beyond the baseline, by kind (e.g. "TCPSocketWrap: +1"). */
  extraHandles(): string[] {
    const extra: string[] = [];
    for (const [kind, count] of activeHandles()) {
      const before = this.handles.get(kind) ?? 0;
      if (count > before) extra.push(`${kind}: +${count - before}`);
    }
    return extra;
  }
}

/**
 * Network handles (TCP and UDP sockets, listeners): what a lock adapter could leave open. Pipes and
 * child processes belong to the test servers the adapter's test file runs, not to the adapter.
 */
function activeHandles(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) {
    if (!/TCP|UDP/i.test(kind)) continue;
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return counts;
}

function activeRefTimers(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
}
