import { type CreateLockProviderOptions, InvalidArgumentError, type LockProvider } from '@holdfast/core';
import { COMMON_PROVIDER_OPTION_NAMES, createProvider, providerOptions } from '@holdfast/core/backend';
import { ZookeeperBackend } from './backend.js';
import { parseUrl, resolveOptions, type ZookeeperProviderOptions } from './options.js';

export { ZOOKEEPER_CAPABILITIES, zookeeperCapabilities } from './backend.js';
export { keyNode, keyOfNode } from './node-names.js';
export { DEFAULT_SESSION_TIMEOUT_MS, type ZookeeperProviderOptions } from './options.js';

/**
 * A lock provider on ZooKeeper with Curator's lock recipe: ephemeral sequential znodes, a waiter
 * watches only its predecessor, czxid fencing tokens, one session per provider whose suspension or
 * expiry tells every holder (docs/semantics-zookeeper.md).
 */
export function createZookeeperProvider(options: ZookeeperProviderOptions): LockProvider {
  const backend = new ZookeeperBackend(resolveOptions(options));
  return createProvider(backend, providerOptions(options));
}

/** For `createLockProvider('zookeeper://127.0.0.1:2181,127.0.0.1:2182/app?sessionTimeout=5s')`. */
export function createProviderFromUrl(url: string, options: CreateLockProviderOptions = {}): LockProvider {
  const { settings } = parseUrl(url);
  const merged: Record<string, unknown> = { ...(options.adapter ?? {}), ...settings, url };
  for (const name of COMMON_PROVIDER_OPTION_NAMES) {
    if (options[name] === undefined) continue;
    if (merged[name] !== undefined) throw new InvalidArgumentError(name, 'given both in the URL and in the options');
    merged[name] = options[name];
  }
  // The URL's parameters were read above; the address alone goes on.
  merged['url'] = url.replace(/\?.*$/, '');
  return createZookeeperProvider(merged as ZookeeperProviderOptions);
}
