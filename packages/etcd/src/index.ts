import { type CreateLockProviderOptions, InvalidArgumentError, type LockProvider } from '@holdfast/core';
import { COMMON_PROVIDER_OPTION_NAMES, createProvider, providerOptions } from '@holdfast/core/backend';
import { EtcdBackend } from './backend.js';
import { type EtcdLockOptions, resolveOptions } from './options.js';
import { optionsFromUrl } from './url.js';

export { ETCD_CAPABILITIES } from './backend.js';
export type { EtcdLockOptions } from './options.js';

/**
 * A lock provider on etcd v3 with etcd's own concurrency protocol (client/v3/concurrency: a session
 * lease, one entry per contender, the oldest create revision holds): its locks interoperate with
 * `etcdctl lock`. Pass `endpoints`, or the app's own `@grpc/grpc-js` channel as `channel`.
 */
export function createEtcdProvider(options: EtcdLockOptions): LockProvider {
  const common = providerOptions(options);
  return createProvider(new EtcdBackend(resolveOptions(options)), common);
}

/** For `createLockProvider('etcd://127.0.0.1:2379,127.0.0.1:22379/app?callTimeout=2s')`. */
export function createProviderFromUrl(url: string, options: CreateLockProviderOptions = {}): LockProvider {
  const settings: Record<string, unknown> = { ...optionsFromUrl(url, options.adapter) };
  for (const name of COMMON_PROVIDER_OPTION_NAMES) {
    if (options[name] === undefined) continue;
    if (settings[name] !== undefined) throw new InvalidArgumentError(name, 'given both in the URL and in the options');
    settings[name] = options[name];
  }
  return createEtcdProvider(settings as unknown as EtcdLockOptions);
}
