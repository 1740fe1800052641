import { trackTimers } from './timer-tracker.js';

/**
 * Timers as they were before the target's first provider existed, so that a timer started along
 * with the first provider (a module-level sweeper, a shared pool) and never stopped counts as a leak.
 */
export class LeakBaseline {
  private tracker: ReturnType<typeof trackTimers> | undefined;
  private refTimers = 0;

  start(): void {
    this.refTimers = activeRefTimers();
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
}

function activeRefTimers(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
}
