import { type AdapterModule, configuredUrl, createLockProvider, type LockProvider } from '@holdfast/core';
import { UsageError } from './usage.js';

/**
 * The adapters the CLI ships with. They are dependencies of this package and handed to core
 * explicitly, so the CLI works against every backend it documents wherever it is installed;
 * each is loaded only when its scheme is used.
 */
const lazy = (load: () => Promise<AdapterModule>): AdapterModule => ({
  createProviderFromUrl: async (url, options) => (await load()).createProviderFromUrl(url, options),
});

const ADAPTERS: Record<string, AdapterModule> = {
  'memory:': lazy(() => import('@holdfast/memory')),
  'redis:': lazy(() => import('@holdfast/redis')),
  'rediss:': lazy(() => import('@holdfast/redis')),
  'redis+cluster:': lazy(() => import('@holdfast/redis')),
  'rediss+cluster:': lazy(() => import('@holdfast/redis')),
  'redis+sentinel:': lazy(() => import('@holdfast/redis')),
  'rediss+sentinel:': lazy(() => import('@holdfast/redis')),
  'consul:': lazy(() => import('@holdfast/consul')),
  'mongodb:': lazy(() => import('@holdfast/mongodb')),
  'mongodb+srv:': lazy(() => import('@holdfast/mongodb')),
  'postgres:': lazy(() => import('@holdfast/postgres')),
  'postgresql:': lazy(() => import('@holdfast/postgres')),
  'mysql:': lazy(() => import('@holdfast/mysql')),
  'etcd:': lazy(() => import('@holdfast/etcd')),
};

const MISSING_BACKEND =
  'no backend: pass --backend URL or set HOLDFAST_URL (redis://host:6379, consul://host:8500, mongodb://host/db, postgres://user@host/db, mysql://user@host/db, etcd://host:2379; memory: for this process only)';

/** The backend URL of a command: --backend, else $HOLDFAST_URL, else `fallback`, else a usage error. */
export function backendUrl(flag: string | undefined, fallback?: string): string {
  const url = flag ?? configuredUrl() ?? fallback;
  if (url === undefined) throw new UsageError(MISSING_BACKEND);
  return url;
}

export function openProvider(url: string, owner?: string): Promise<LockProvider> {
  return createLockProvider(url, { adapters: ADAPTERS, ...(owner === undefined ? {} : { owner }) });
}
