import { type CommonProviderOptions, type CreateLockProviderOptions, InvalidArgumentError, type LockProvider } from '@holdfast/core';
import { COMMON_PROVIDER_OPTION_NAMES, createProvider, providerOptions } from '@holdfast/core/backend';
import { MemoryBackend } from './memory-backend.js';
import { MemoryStore } from './memory-store.js';

export { MEMORY_CAPABILITIES, MemoryBackend } from './memory-backend.js';
export { MemoryStore } from './memory-store.js';

export interface MemoryProviderOptions extends CommonProviderOptions {
  /** The store shared by providers that should see each other's locks. Default: the process-wide store. */
  readonly store?: MemoryStore;
}

/**
 * One map per process, not per copy of this module: an app that loads the package through both
 * `import` and `require` gets two module instances, and `memory:` must still mean one store.
 */
const STORES = Symbol.for('holdfast.memory.stores');
const namedStores: Map<string, MemoryStore> = ((globalThis as Record<symbol, unknown>)[STORES] ??= new Map()) as Map<string, MemoryStore>;

/** The store behind `memory:` URLs; `memory://name` selects a separate named store. */
export function sharedStore(name = ''): MemoryStore {
  let store = namedStores.get(name);
  if (!store) {
    store = new MemoryStore();
    namedStores.set(name, store);
  }
  return store;
}

const OPTION_NAMES: readonly string[] = ['store', ...COMMON_PROVIDER_OPTION_NAMES];

export function createMemoryProvider(options: MemoryProviderOptions = {}): LockProvider {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object');
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.includes(name))
      throw new InvalidArgumentError(name, `not a memory option; expected one of ${OPTION_NAMES.join(', ')} (docs/options.md)`);
  }
  const backend = new MemoryBackend(options.store ?? sharedStore());
  return createProvider(backend, providerOptions(options));
}

/** Entry point used by `createLockProvider('memory:')`. */
export function createProviderFromUrl(url: string, options: CreateLockProviderOptions = {}): LockProvider {
  const unknown = Object.keys(options.adapter ?? {});
  if (unknown.length > 0) throw new InvalidArgumentError('adapter', `the memory backend has no options (got ${unknown.join(', ')})`);
  const parsed = new URL(url);
  if (parsed.search) throw new InvalidArgumentError('url', `memory: URLs take no query options (got "${parsed.search}")`);
  const name = parsed.host || parsed.pathname.replace(/^\/+/, '');
  return createMemoryProvider({ ...providerOptions(options), store: sharedStore(name) });
}
