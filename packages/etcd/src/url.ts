import { InvalidArgumentError, redactUrl } from '@holdfast/core';
import { adapterUrl, checkOptionNames } from '@holdfast/core/backend';
import type { EtcdLockOptions } from './options.js';

const SETTINGS_IN_ADAPTER = ['channel', 'credentials', 'prefix'];

/**
 * `etcd://host:2379,host:22379[/prefix]?prefix=&tls=true&callTimeout=5s&closeTimeout=5s`: the
 * members' client addresses (not a WHATWG URL host, so read here), then the path or `prefix`. A
 * parameter that is not one of these is refused.
 */
export function optionsFromUrl(text: string, adapter: Readonly<Record<string, unknown>> = {}): EtcdLockOptions {
  const m = /^etcd:\/\/([^/?#]*)([^?#]*)(\?[^#]*)?$/i.exec(text);
  if (!m) throw new InvalidArgumentError('url', `"${redactUrl(text)}" is not etcd://host:2379[,host:port...][/prefix]`);
  const hosts = m[1]!;
  if (hosts.includes('@')) throw new InvalidArgumentError('url', 'credentials in the URL are not used: pass adapter.credentials');
  // The rest is a URL of its own once the host list is out of the way.
  const { url, settings } = adapterUrl(`etcd://members${m[2]}${m[3] ?? ''}`, {
    schemes: ['etcd:'],
    example: 'etcd://127.0.0.1:2379/prefix',
    own: {
      prefix: ['prefix', 'text'],
      tls: ['tls', 'boolean'],
      callTimeout: ['callTimeoutMs', 'duration'],
      closeTimeout: ['closeTimeoutMs', 'duration'],
    },
    driver: { name: 'etcd', parameters: new Set() },
  });
  const pathPrefix = decodeURIComponent(url.pathname.replace(/^\/+|\/+$/g, ''));
  if (pathPrefix && settings['prefix'] !== undefined)
    throw new InvalidArgumentError('prefix', 'given both as the URL path and as ?prefix=');
  const scheme = settings['tls'] === true ? 'https://' : '';
  const endpoints = (hosts || '127.0.0.1:2379').split(',').map((h) => `${scheme}${h}`);
  const { tls: _tls, ...rest } = settings;
  const options: Record<string, unknown> = { endpoints, ...rest, ...(pathPrefix ? { prefix: pathPrefix } : {}) };
  if (adapter === null || typeof adapter !== 'object') throw new InvalidArgumentError('adapter', 'expected an object of etcd settings');
  checkOptionNames(Object.keys(adapter), { backend: 'etcd', known: SETTINGS_IN_ADAPTER, renamed: {}, where: 'adapter.' });
  for (const [name, value] of Object.entries(adapter)) {
    if (value === undefined) continue;
    if (options[name] !== undefined) throw new InvalidArgumentError(`adapter.${name}`, 'also given in the URL');
    options[name] = value;
  }
  return options as unknown as EtcdLockOptions;
}
