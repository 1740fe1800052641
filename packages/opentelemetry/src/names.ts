/**
 * The names this instrumentation gives its spans, metrics and attributes. OpenTelemetry has no
 * semantic conventions for locks, so they live under `holdfast.*`; durations are in seconds, as the
 * semantic conventions ask of duration histograms (`http.server.request.duration` and its siblings).
 */
export const SPAN_NAMES = {
  /** From the `acquire` / `tryAcquire` call to its answer: the wait is included. */
  acquire: 'holdfast.acquire',
  /** From the grant to the release, the loss or the hand-off. */
  hold: 'holdfast.hold',
} as const;

export const METRIC_NAMES = {
  /** Histogram, seconds: from the acquire call to its answer, per outcome. */
  waitDuration: 'holdfast.lock.wait.duration',
  /** Histogram, seconds: from the grant to the end of the hold, per hold outcome. */
  holdDuration: 'holdfast.lock.hold.duration',
  /** Counter: locks granted. */
  grants: 'holdfast.lock.grants',
  /** Counter: acquires that found the key held (a `tryAcquire` answered `null`, an `acquire` that had to wait). */
  busy: 'holdfast.lock.busy',
  /** Counter: held locks lost, per reason. */
  losses: 'holdfast.lock.losses',
  /** Counter: successful renewals of held locks. */
  renewals: 'holdfast.lock.renewals',
  /** Counter: backend calls that failed or did not answer in time, per operation. */
  backendErrors: 'holdfast.lock.backend_errors',
} as const;

export const ATTRIBUTES = {
  /** The backend's name: `memory`, `redis`, `postgres`, ... */
  backend: 'holdfast.backend',
  /** What the `keyLabel` option made of the key; absent when it returns `undefined` (the default). */
  key: 'holdfast.lock.key',
  /** `granted`, `busy`, `timeout`, `aborted` or `error`. */
  acquireOutcome: 'holdfast.acquire.outcome',
  /** `released`, `lost` or `handed-off`. */
  holdOutcome: 'holdfast.hold.outcome',
  /** Why a lock was lost: core's `LossReason`, or `release-unconfirmed`. */
  lossReason: 'holdfast.loss.reason',
  /** The backend call that failed: `acquire`, `wait`, `renew`, `release`, ... */
  operation: 'holdfast.operation',
  /** The fencing token of a granted lock (spans only: one value per grant). */
  token: 'holdfast.lock.token',
  /** The caller's `waitMs` (spans only). */
  waitMs: 'holdfast.acquire.wait_ms',
  /** The semantic conventions' error class: a Holdfast error's code, or the error's name. */
  errorType: 'error.type',
} as const;

/**
 * How a hold ended. A release the backend did not confirm is reported as a loss (`lost`, reason
 * `release-unconfirmed`), as core reports it to the lock's signal.
 */
export type HoldOutcome = 'released' | 'lost' | 'handed-off';

/** Bucket boundaries in seconds, from a millisecond hand-off to an hour-long job. */
export const DURATION_BUCKETS_S = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
