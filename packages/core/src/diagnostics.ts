import { channel } from 'node:diagnostics_channel';

/**
 * Holdfast publishes its lock life cycle on `node:diagnostics_channel` channels, for metrics,
 * tracing and logs without a dependency: subscribe with `diagnostics_channel.subscribe(name, fn)`.
 * Publishing costs nothing while nobody subscribes.
 */
export const CHANNELS = {
  acquire: 'holdfast:acquire',
  wait: 'holdfast:wait',
  grant: 'holdfast:grant',
  renew: 'holdfast:renew',
  renewFailed: 'holdfast:renew-failed',
  lost: 'holdfast:lost',
  release: 'holdfast:release',
  backendRetry: 'holdfast:backend-retry',
  acquireEnd: 'holdfast:acquire-end',
  handOff: 'holdfast:hand-off',
  backendError: 'holdfast:backend-error',
} as const;

/** How an `acquire` / `tryAcquire` ended (`holdfast:acquire-end`): `busy` is a `tryAcquire` that got `null`. */
export type AcquireOutcome = 'granted' | 'busy' | 'timeout' | 'aborted' | 'error';

/**
 * Why a held lock was lost (`holdfast:lost`, field `reason`); `detail` says it in words.
 * - `force-released`: `forceRelease` of its key through its own provider;
 * - `not-held`: the backend answered that the lock is no longer this holder's (a renewal, `extend` or `isHeld`);
 * - `renewal-failed`: renewals failed (no answer, backend errors) until the safety deadline;
 * - `lease-expired`: an `autoRenew: false` lease ran out;
 * - `backend`: the adapter reported it (a session or connection gone, the record deleted or
 *   force-released by another process, a TTL that ran out in the backend).
 */
export type LossReason = 'force-released' | 'not-held' | 'renewal-failed' | 'lease-expired' | 'backend';

/** What every message carries; each channel adds its own fields (see docs/observability.md). */
export interface LockEvent {
  readonly backend: string;
  readonly owner: string;
  readonly key: string;
  readonly [field: string]: unknown;
}

/** `holdfast:backend-error`: a backend call failed or did not answer in time (a `BackendError`). */
export interface BackendErrorEvent {
  readonly backend: string;
  readonly owner: string;
  /** The lock's key, for calls about one key (acquire attempts, waits, renewals, releases). */
  readonly key: string | undefined;
  /** The call: `acquire`, `wait`, `renew`, `extend`, `release`, `isHeld`, `inspect`, `forceRelease`, `list`, `close`, ... */
  readonly operation: string;
  readonly error: unknown;
}

/** A pino-, bunyan- or console-like logger: `logger.warn({ key, ... }, 'message')`. */
export interface Logger {
  warn(fields: object, message: string): void;
}

const channels = Object.fromEntries(Object.values(CHANNELS).map((name) => [name, channel(name)]));

export function publish(name: (typeof CHANNELS)[keyof typeof CHANNELS], event: () => LockEvent | BackendErrorEvent): void {
  const target = channels[name]!;
  if (target.hasSubscribers) target.publish(event());
}
