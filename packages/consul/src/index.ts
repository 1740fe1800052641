import { type CreateLockProviderOptions, InvalidArgumentError, type LockProvider } from '@holdfast/core';
import { COMMON_PROVIDER_OPTION_NAMES, createProvider, providerOptions } from '@holdfast/core/backend';
import { ConsulBackend } from './backend.js';
import { type ConsulLockOptions, optionsFromUrl, resolveOptions } from './options.js';

export { CONSUL_CAPABILITIES } from './backend.js';
export { LOCK_FLAG, LOCK_SESSION_NAME, SEMAPHORE_FLAG } from './constants.js';
export type { ConsulLockOptions } from './options.js';

/**
 * A lock provider on Consul's sessions and KV, with the Go client's protocols: its locks interoperate
 * with `consul lock`, its semaphores (`provider.semaphore(key, n)`) with `consul lock -n N`.
 */
export function createConsulProvider(options: ConsulLockOptions): LockProvider {
  const backend = new ConsulBackend(resolveOptions(options));
  return createProvider(backend, providerOptions(options));
}

/** For `createLockProvider('consul://127.0.0.1:8500?prefix=app&lockDelay=1s')`. */
export function createProviderFromUrl(url: string, options: CreateLockProviderOptions = {}): LockProvider {
  const fromUrl = optionsFromUrl(url, options.adapter);
  const settings: Record<string, unknown> = { ...fromUrl };
  for (const name of COMMON_PROVIDER_OPTION_NAMES) {
    if (options[name] === undefined) continue;
    if (settings[name] !== undefined) throw new InvalidArgumentError(name, 'given both in the URL and in the options');
    settings[name] = options[name];
  }
  return createConsulProvider(settings as unknown as ConsulLockOptions);
}
