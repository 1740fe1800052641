import { CHANNELS, type Logger, publish } from './diagnostics.js';

/**
 * A waiting acquire that retries a failing backend says so, on the logger and the
 * `holdfast:backend-retry` channel, at most once per interval for the whole provider: a thousand
 * waiters behind one outage must not write a thousand lines a second.
 */
export const OUTAGE_REPORT_INTERVAL_MS = 10_000;

export class OutageReport {
  private lastReportAt = -Infinity;

  constructor(
    private readonly backend: string,
    private readonly owner: string,
    private readonly logger: Logger | undefined,
    private readonly intervalMs = OUTAGE_REPORT_INTERVAL_MS,
  ) {}

  /** One failed attempt of a waiting acquire that will be retried. */
  retrying(key: string, error: unknown, failures: number, answeredBefore: boolean): void {
    const now = performance.now();
    if (now - this.lastReportAt < this.intervalMs) return;
    this.lastReportAt = now;
    const message = error instanceof Error ? error.message : String(error);
    const fields = { backend: this.backend, owner: this.owner, key, error, failures, answeredBefore };
    publish(CHANNELS.backendRetry, () => fields);
    this.logger?.warn(fields, `holdfast: acquire of lock "${key}" is retrying: ${message}`);
  }
}
