import type { Logger } from './diagnostics.js';
import { InvalidArgumentError } from './errors.js';
import { checkTimerRange } from './timer-range.js';
import type { TtlPolicy } from './validation.js';

export const DEFAULT_POLL_INTERVAL_MS = 250;
export const DEFAULT_CLOSE_TIMEOUT_MS = 5000;

/** The provider-level options every adapter's factory takes beside its own (docs/options.md). */
export interface CommonProviderOptions {
  /** Identity shown as the owner of every lock this instance takes. Default `<host>:<pid>:<random>`. */
  readonly owner?: string;
  /**
   * Longest time one backend call may take before the caller gets a BackendError, in ms, whatever
   * the server does (hung, unreachable, a write stalled on the way). Default 5000.
   */
  readonly callTimeoutMs?: number;
  /** Longest time close() takes, in ms; locks whose release is not confirmed by then are reported lost. Default 5000. */
  readonly closeTimeoutMs?: number;
  /**
   * A `ttlMs` below the backend's minimum is raised to it ('raise', the default: the same code runs
   * on every backend) or rejected with InvalidArgumentError ('reject').
   */
  readonly ttlBelowMinimum?: TtlPolicy;
  /** Warnings (renewal failures, lost locks, unconfirmed releases) go here; pino-style `warn(fields, message)`. */
  readonly logger?: Logger;
}

/** The names of CommonProviderOptions, for adapters' option-name checks. */
export const COMMON_PROVIDER_OPTION_NAMES = ['owner', 'callTimeoutMs', 'closeTimeoutMs', 'ttlBelowMinimum', 'logger'] as const;

/** What core's createProvider takes: the common options and the poll interval of backends that poll. */
export interface ProviderOptions extends CommonProviderOptions {
  /** Retry interval while waiting, for backends that cannot wake waiters by event. Default 250 ms. */
  readonly pollIntervalMs?: number;
}

/**
 * The provider-level settings out of an app's options, for adapters' factories. Checks the durations
 * among them (InvalidArgumentError), so an adapter that calls it before creating its clients refuses
 * a bad value before anything is touched.
 */
export function providerOptions(options: {
  readonly owner?: string | undefined;
  readonly callTimeoutMs?: number | undefined;
  readonly closeTimeoutMs?: number | undefined;
  readonly ttlBelowMinimum?: TtlPolicy | undefined;
  readonly logger?: Logger | undefined;
}): ProviderOptions {
  const picked: { owner?: string; callTimeoutMs?: number; closeTimeoutMs?: number; ttlBelowMinimum?: TtlPolicy; logger?: Logger } = {};
  if (options.logger !== undefined) picked.logger = options.logger;
  if (options.owner !== undefined) picked.owner = options.owner;
  if (options.ttlBelowMinimum !== undefined) picked.ttlBelowMinimum = options.ttlBelowMinimum;
  if (options.callTimeoutMs !== undefined) picked.callTimeoutMs = positiveMs(options.callTimeoutMs, 'callTimeoutMs', 0);
  if (options.closeTimeoutMs !== undefined) picked.closeTimeoutMs = positiveMs(options.closeTimeoutMs, 'closeTimeoutMs', 0);
  return picked;
}

export function ttlPolicyOption(value: unknown): TtlPolicy {
  if (value === undefined) return 'raise';
  if (value === 'raise' || value === 'reject') return value;
  throw new InvalidArgumentError('ttlBelowMinimum', `expected "raise" or "reject", got ${JSON.stringify(value)}`);
}

/** A bound or an interval (callTimeoutMs, closeTimeoutMs, pollIntervalMs): none of them has an "unlimited" value. */
export function positiveMs(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidArgumentError(name, `expected a positive number of ms, got ${String(value)}`);
  }
  return checkTimerRange(name, value);
}
