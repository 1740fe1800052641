const SWEEP_EVERY_MS = 10_000;

/**
 * Paces the sweeps that drop grants which lapsed without a release (autoRenew: false, or an app
 * that never released) from a registry: at most one every ten seconds.
 */
export class SweepClock {
  private last = Date.now();

  /** The time now when a sweep is due, else undefined. */
  due(): number | undefined {
    const now = Date.now();
    if (now - this.last < SWEEP_EVERY_MS) return undefined;
    this.last = now;
    return now;
  }
}
