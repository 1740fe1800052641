import { CHANNELS, type Logger, publish } from './diagnostics.js';
import { BackendError } from './errors.js';

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

/**
 * What a waiting acquire throws when the backend failed before it ever answered this provider: a
 * wrong host or port, a server not started. Reported at once rather than retried for ever in
 * silence; `waitForBackend: true` asks for the retries.
 */
export function neverAnswered(backend: string, error: unknown): BackendError {
  const message = error instanceof Error ? error.message : String(error);
  return new BackendError(
    backend,
    `it has never answered this provider (${message}); check the URL, or pass waitForBackend: true to wait for it to come up`,
    error,
  );
}
