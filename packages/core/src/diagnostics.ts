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
} as const;

/** What every message carries; each channel adds its own fields (see docs/observability.md). */
export interface LockEvent {
  readonly backend: string;
  readonly owner: string;
  readonly key: string;
  readonly [field: string]: unknown;
}

/** A pino-, bunyan- or console-like logger: `logger.warn({ key, ... }, 'message')`. */
export interface Logger {
  warn(fields: object, message: string): void;
}

const channels = Object.fromEntries(Object.values(CHANNELS).map((name) => [name, channel(name)]));

export function publish(name: (typeof CHANNELS)[keyof typeof CHANNELS], event: () => LockEvent): void {
  const target = channels[name]!;
  if (target.hasSubscribers) target.publish(event());
}
