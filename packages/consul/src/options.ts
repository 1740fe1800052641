import { type CommonProviderOptions, InvalidArgumentError, parseDuration } from '@holdfast/core';

// Core's default per-call bound: the adapter's background calls (renewals, clean-ups) use it too.
import {
  COMMON_PROVIDER_OPTION_NAMES,
  checkOptionNames as checkNames,
  DEFAULT_CALL_TIMEOUT_MS,
  MAX_TIMER_MS,
} from '@holdfast/core/backend';
import { DEFAULT_LOCK_DELAY_MS, DEFAULT_LOCK_DELAY_RETRY_MS, DEFAULT_MONITOR_RETRIES, DEFAULT_MONITOR_RETRY_MS } from './constants.js';
import { QUEUE_SUFFIX } from './queue.js';

/** Consul's largest lock-delay; waiting longer than it before retrying an acquire buys nothing. */
const MAX_LOCK_DELAY_MS = 60_000;

export interface ConsulLockOptions extends CommonProviderOptions {
  /** The agent's HTTP address, e.g. http://127.0.0.1:8500 (https: for TLS). */
  readonly url: string;
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
  readonly callTimeoutMs: number;
}

/** The adapter's own settings: what `options.adapter` may carry beside a URL (a token kept out of logs, for one). */
const ADAPTER_KEYS: readonly Setting[] = [
  'prefix',
  'token',
  'datacenter',
  'lockDelayMs',
  'lockDelayRetryMs',
  'monitorRetries',
  'monitorRetryMs',
  'sessionMode',
];
/** Everything createConsulProvider takes: the URL, the adapter's settings and core's own options. */
const OPTION_NAMES: readonly (keyof ConsulLockOptions)[] = ['url', ...ADAPTER_KEYS, ...COMMON_PROVIDER_OPTION_NAMES];

/** Old names, refused by name so that a setting is never silently ignored. */
const RENAMED: Readonly<Record<string, string>> = { address: 'url' };

/** InvalidArgumentError for an old or unknown option name. */
export function checkOptionNames(names: readonly string[], known: readonly string[], where = ''): void {
  checkNames(names, { backend: 'Consul', known, renamed: RENAMED, where });
}

/** Checks every option (InvalidArgumentError on the first bad one) before anything talks to Consul. */
export function resolveOptions(options: ConsulLockOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', 'expected an object');
  checkOptionNames(Object.keys(options), OPTION_NAMES);
  const address = checkAgentUrl(options.url);
  const lockDelayMs = wholeMs('lockDelayMs', options.lockDelayMs, 0, MAX_LOCK_DELAY_MS) ?? DEFAULT_LOCK_DELAY_MS;
  const prefixText = optionalString('prefix', options.prefix) ?? 'holdfast';
  const prefix = prefixText.replace(/^\/+|\/+$/g, '');
  if (prefix === '') throw new InvalidArgumentError('prefix', 'must not be empty (locks are watched under it)');
  if (prefix.endsWith(QUEUE_SUFFIX)) {
    throw new InvalidArgumentError(
      'prefix',
      `must not end in "${QUEUE_SUFFIX}": "<prefix>${QUEUE_SUFFIX}/" holds the wait queues of prefix "<prefix>"`,
    );
  }
  const sessionMode = options.sessionMode ?? 'shared';
  if (sessionMode !== 'shared' && sessionMode !== 'per-lock') {
    throw new InvalidArgumentError('sessionMode', `expected "shared" or "per-lock", got ${JSON.stringify(sessionMode)}`);
  }
  wholeMs('closeTimeoutMs', options.closeTimeoutMs, 1, MAX_TIMER_MS);
  optionalString('owner', options.owner);
  return {
    address,
    prefix,
    token: optionalString('token', options.token),
    datacenter: optionalString('datacenter', options.datacenter),
    lockDelayMs,
    lockDelayRetryMs:
      wholeMs('lockDelayRetryMs', options.lockDelayRetryMs, 1, MAX_LOCK_DELAY_MS) ??
      Math.max(100, Math.min(DEFAULT_LOCK_DELAY_RETRY_MS, lockDelayMs)),
    monitorRetries: wholeMs('monitorRetries', options.monitorRetries, 0, 1_000) ?? DEFAULT_MONITOR_RETRIES,
    monitorRetryMs: wholeMs('monitorRetryMs', options.monitorRetryMs, 1, 3_600_000) ?? DEFAULT_MONITOR_RETRY_MS,
    sessionMode,
    callTimeoutMs: wholeMs('callTimeoutMs', options.callTimeoutMs, 1, MAX_TIMER_MS) ?? DEFAULT_CALL_TIMEOUT_MS,
  };
}

/** The agent's http(s) URL; consul:// URLs, whose parameters only createLockProvider reads, are refused. */
function checkAgentUrl(address: unknown): string {
  if (typeof address !== 'string') throw new InvalidArgumentError('url', 'expected the agent URL, e.g. http://127.0.0.1:8500');
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    throw new InvalidArgumentError('url', `"${address}" is not a URL (e.g. http://127.0.0.1:8500)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidArgumentError('url', `expected http: or https: (consul:// URLs go to createLockProvider), got ${url.protocol}`);
  }
  return address;
}

/** An integer in [min, max], or undefined when not given. */
function wholeMs(name: string, value: unknown, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(name, `expected a whole number in ${min}..${max}, got ${String(value)}`);
  }
  return value;
}

function optionalString(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '')
    throw new InvalidArgumentError(name, `expected a non-empty string, got ${JSON.stringify(value)}`);
  return value;
}

type Setting = Exclude<keyof ConsulLockOptions, 'url' | 'owner' | 'ttlBelowMinimum' | 'logger'>;

/** URL query parameter -> option, and how its text becomes a value. */
const PARAMETERS: Record<string, { option: Setting; parse: (text: string, name: string) => unknown }> = {
  prefix: { option: 'prefix', parse: (text) => text },
  token: { option: 'token', parse: (text) => text },
  dc: { option: 'datacenter', parse: (text) => text },
  lockDelay: { option: 'lockDelayMs', parse: parseDuration },
  lockDelayRetry: { option: 'lockDelayRetryMs', parse: parseDuration },
  monitorRetries: { option: 'monitorRetries', parse: count },
  monitorRetryTime: { option: 'monitorRetryMs', parse: parseDuration },
  session: { option: 'sessionMode', parse: (text) => text },
  callTimeout: { option: 'callTimeoutMs', parse: parseDuration },
  closeTimeout: { option: 'closeTimeoutMs', parse: parseDuration },
};

/**
 * consul://host:port[/prefix]?prefix=&lockDelay=1s&lockDelayRetry=&monitorRetries=&monitorRetryTime=
 * &session=shared|per-lock&token=&dc=&tls=true&callTimeout=5s&closeTimeout=5s
 *
 * Every parameter is checked: an unknown, repeated, empty or malformed one is an InvalidArgumentError,
 * as is a setting given both in the URL and in `adapter`. Values are range-checked by resolveOptions.
 */
export function optionsFromUrl(text: string, adapter: Readonly<Record<string, unknown>> = {}): ConsulLockOptions {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidArgumentError('url', 'not a valid URL (expected consul://host:8500[/prefix]?…)');
  }
  if (url.username || url.password)
    throw new InvalidArgumentError('url', 'credentials in the URL are not used: pass ?token= or adapter.token');
  if (url.hash) throw new InvalidArgumentError('url', 'a #fragment means nothing here');
  const settings: Record<string, unknown> = {};
  for (const name of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(name);
    if (values.length > 1) throw new InvalidArgumentError(name, 'given more than once');
    const value = values[0]!;
    if (name === 'tls') continue;
    const parameter = PARAMETERS[name];
    if (!parameter)
      throw new InvalidArgumentError(name, `unknown consul:// URL parameter (known: ${[...Object.keys(PARAMETERS), 'tls'].join(', ')})`);
    if (value === '') throw new InvalidArgumentError(name, 'empty value');
    settings[parameter.option] = parameter.parse(value, name);
  }
  const tls = url.searchParams.get('tls');
  if (tls !== null && tls !== 'true' && tls !== 'false') throw new InvalidArgumentError('tls', `expected true or false, got "${tls}"`);
  const pathPrefix = decodeURIComponent(url.pathname.replace(/^\/+|\/+$/g, ''));
  if (pathPrefix) {
    if (settings['prefix'] !== undefined && settings['prefix'] !== pathPrefix)
      throw new InvalidArgumentError('prefix', 'given both as the URL path and as ?prefix=');
    settings['prefix'] = pathPrefix;
  }
  if (adapter === null || typeof adapter !== 'object') throw new InvalidArgumentError('adapter', 'expected an object of Consul settings');
  checkOptionNames(Object.keys(adapter), ADAPTER_KEYS, 'adapter.');
  for (const [name, value] of Object.entries(adapter)) {
    if (value === undefined) continue;
    if (settings[name] !== undefined) throw new InvalidArgumentError(`adapter.${name}`, 'also given in the URL');
    settings[name] = value;
  }
  const scheme = tls === 'true' ? 'https' : 'http';
  return { url: `${scheme}://${url.host || '127.0.0.1:8500'}`, ...settings } as ConsulLockOptions;
}

/** A whole number written in decimal digits only ("abc", "-5", "1.5" and "" are refused). */
function count(text: string, name: string): number {
  if (!/^\d+$/.test(text)) throw new InvalidArgumentError(name, `expected a whole number >= 0, got "${text}"`);
  return Number(text);
}
