import { createProvider, type ProviderOptions } from '@holdfast/core/backend';
import type { CreateLockProviderOptions, LockProvider } from '@holdfast/core';
import { ConsulBackend } from './consul-backend.js';
import { type ConsulLockOptions, optionsFromUrl, resolveOptions } from './options.js';

export { ConsulBackend } from './consul-backend.js';
export { LOCK_FLAG, LOCK_SESSION_NAME } from './constants.js';
export type { ConsulLockOptions } from './options.js';

export function createConsulProvider(options: ConsulLockOptions & Pick<ProviderOptions, 'owner'>): LockProvider {
  return createProvider(new ConsulBackend(resolveOptions(options)), { owner: options.owner });
}

/** For `createLockProvider('consul://127.0.0.1:8500?prefix=app&lockDelay=1s')`. */
export function createProviderFromUrl(url: string, options: CreateLockProviderOptions = {}): LockProvider {
  return createConsulProvider({ ...optionsFromUrl(new URL(url), options.adapter), owner: options.owner } as ConsulLockOptions);
}
export { ConsulSemaphore, type ConsulSemaphoreOptions, type SemaphoreSlot } from './semaphore.js';
export { SEMAPHORE_FLAG } from './constants.js';
