import { InvalidArgumentError, parseDuration } from '@holdfast/core';
import { type ConsulLockOptions, checkOptionNames } from './options.js';

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

/** `options.adapter` keys a URL cannot carry conveniently (a token kept out of logs, for one). */
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
