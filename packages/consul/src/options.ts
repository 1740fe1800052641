import { InvalidArgumentError } from '@holdfast/core';
import { parseDurationMs } from './consul-http.js';
import { DEFAULT_LOCK_DELAY_MS, DEFAULT_LOCK_DELAY_RETRY_MS, DEFAULT_MONITOR_RETRIES, DEFAULT_MONITOR_RETRY_MS } from './constants.js';

export interface ConsulLockOptions {
  /** Agent HTTP address, e.g. http://127.0.0.1:8500. */
  readonly address: string;
  /** Consul key prefix for every lock: key "a/b" is stored at "<prefix>/a/b". Default "holdfast". */
  readonly prefix?: string;
  readonly token?: string;
  readonly datacenter?: string;
  /** Lock-delay of the sessions this provider creates (Consul: 0..60 s, default 15 s). */
  readonly lockDelayMs?: number;
  /** Pause before retrying an acquire refused by a lock-delay. Default min(5 s, lockDelayMs), at least 100 ms. */
  readonly lockDelayRetryMs?: number;
  /** Consecutive failed monitor reads (network, 5xx) tolerated before held locks are declared lost. */
  readonly monitorRetries?: number;
  readonly monitorRetryMs?: number;
  /** 'shared' (default): one renewed session per provider and TTL; 'per-lock': one per lock, like the Go client. */
  readonly sessionMode?: 'shared' | 'per-lock';
  /** Provider identity shown as lock owner. */
  readonly owner?: string;
}

export interface ResolvedOptions {
  readonly address: string;
  readonly prefix: string;
  readonly token: string | undefined;
  readonly datacenter: string | undefined;
  readonly lockDelayMs: number;
  readonly lockDelayRetryMs: number;
  readonly monitorRetries: number;
  readonly monitorRetryMs: number;
  readonly sessionMode: 'shared' | 'per-lock';
}

export function resolveOptions(options: ConsulLockOptions): ResolvedOptions {
  const lockDelayMs = options.lockDelayMs ?? DEFAULT_LOCK_DELAY_MS;
  if (!Number.isInteger(lockDelayMs) || lockDelayMs < 0 || lockDelayMs > 60_000) {
    throw new InvalidArgumentError('lockDelay', `expected 0..60 s, got ${lockDelayMs} ms`);
  }
  const prefix = (options.prefix ?? 'holdfast').replace(/^\/+|\/+$/g, '');
  if (prefix === '') throw new InvalidArgumentError('prefix', 'must not be empty (locks are watched under it)');
  return {
    address: options.address,
    prefix,
    token: options.token,
    datacenter: options.datacenter,
    lockDelayMs,
    lockDelayRetryMs: options.lockDelayRetryMs ?? Math.max(100, Math.min(DEFAULT_LOCK_DELAY_RETRY_MS, lockDelayMs)),
    monitorRetries: options.monitorRetries ?? DEFAULT_MONITOR_RETRIES,
    monitorRetryMs: options.monitorRetryMs ?? DEFAULT_MONITOR_RETRY_MS,
    sessionMode: options.sessionMode ?? 'shared',
  };
}

/**
 * consul://host:port[/prefix]?prefix=&lockDelay=1s&lockDelayRetry=&monitorRetries=&monitorRetryTime=
 * &session=shared|per-lock&token=&dc=&tls=true
 */
export function optionsFromUrl(url: URL, adapter: Readonly<Record<string, unknown>> = {}): ConsulLockOptions {
  const q = url.searchParams;
  const scheme = q.get('tls') === 'true' ? 'https' : 'http';
  const host = url.host || '127.0.0.1:8500';
  const pathPrefix = decodeURIComponent(url.pathname.replace(/^\/+|\/+$/g, ''));
  const duration = (name: string): number | undefined => {
    const text = q.get(name);
    if (text === null) return undefined;
    try {
      return parseDurationMs(text);
    } catch (error) {
      throw new InvalidArgumentError(name, (error as Error).message);
    }
  };
  const session = q.get('session');
  if (session !== null && session !== 'shared' && session !== 'per-lock') {
    throw new InvalidArgumentError('session', `expected "shared" or "per-lock", got "${session}"`);
  }
  const retries = q.get('monitorRetries');
  return {
    address: `${scheme}://${host}`,
    prefix: q.get('prefix') ?? (pathPrefix || undefined),
    token: q.get('token') ?? (typeof adapter['token'] === 'string' ? adapter['token'] : undefined),
    datacenter: q.get('dc') ?? undefined,
    lockDelayMs: duration('lockDelay'),
    lockDelayRetryMs: duration('lockDelayRetry'),
    monitorRetries: retries === null ? undefined : Number.parseInt(retries, 10),
    monitorRetryMs: duration('monitorRetryTime'),
    sessionMode: session ?? undefined,
  } as ConsulLockOptions;
}
