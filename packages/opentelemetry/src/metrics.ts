import type { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';
import { DURATION_BUCKETS_S, METRIC_NAMES } from './names.js';

/** The instruments, made once per instrumentation from the user's meter. */
export class LockMetrics {
  readonly waitDuration: Histogram;
  readonly holdDuration: Histogram;
  readonly grants: Counter;
  readonly busy: Counter;
  readonly losses: Counter;
  readonly renewals: Counter;
  readonly backendErrors: Counter;

  constructor(meter: Meter) {
    const advice = { explicitBucketBoundaries: DURATION_BUCKETS_S };
    this.waitDuration = meter.createHistogram(METRIC_NAMES.waitDuration, {
      unit: 's',
      description: 'Time from an acquire call to its answer (the wait included), per outcome',
      advice,
    });
    this.holdDuration = meter.createHistogram(METRIC_NAMES.holdDuration, {
      unit: 's',
      description: 'Time a lock was held, from its grant to its release, loss or hand-off',
      advice,
    });
    this.grants = meter.createCounter(METRIC_NAMES.grants, { unit: '{grant}', description: 'Locks granted' });
    this.busy = meter.createCounter(METRIC_NAMES.busy, {
      unit: '{answer}',
      description: 'Acquires that found the key held: a tryAcquire answered null, an acquire that had to wait',
    });
    this.losses = meter.createCounter(METRIC_NAMES.losses, { unit: '{loss}', description: 'Held locks lost, per reason' });
    this.renewals = meter.createCounter(METRIC_NAMES.renewals, { unit: '{renewal}', description: 'Successful renewals of held locks' });
    this.backendErrors = meter.createCounter(METRIC_NAMES.backendErrors, {
      unit: '{error}',
      description: 'Backend calls that failed or did not answer in time, per operation',
    });
  }

  /** Durations arrive in milliseconds from core; the histograms are in seconds. */
  recordSeconds(histogram: Histogram, ms: unknown, attributes: Attributes): void {
    if (typeof ms === 'number' && ms >= 0) histogram.record(ms / 1000, attributes);
  }
}
