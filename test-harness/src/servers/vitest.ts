import { afterAll } from 'vitest';
import {
  consulBinary,
  etcdBinary,
  etcdctlBinary,
  ferretdbBinary,
  mariadbBinaries,
  onPath,
  postgresBinDir,
  redisServerBinary,
} from './binaries.js';
import { isRequired } from './require.js';
import { resolveBackend } from './resolve.js';
import type { BackendKind, ResolvedBackend } from './types.js';
import { zookeeperJar } from './zookeeper.js';

export interface UsedBackend {
  /** The server's URL, or null when the tests must be skipped. */
  url: string | null;
  /** Why there is no URL; also printed once. */
  skipReason: string | null;
  /** A title suffix for describe(), e.g. "redis via local redis-server". */
  label: string;
  backend: ResolvedBackend;
}

/**
 * For the top level of a test file:
 *
 *   const redis = await useBackend('redis');
 *   describe.skipIf(!redis.url)(`RedisLock (${redis.label})`, () => { ... redis.url! ... });
 *
 * Starts or finds the server (see resolveBackend), stops it after the file, prints why when it has to
 * skip, and throws (failing the file) when HOLDFAST_REQUIRE_BACKENDS requires the backend.
 */
export async function useBackend(kind: BackendKind): Promise<UsedBackend> {
  const backend = await resolveBackend(kind);
  if (backend.url === null) {
    console.warn(`[holdfast] SKIP ${kind} tests: ${backend.skipReason}`);
    return { url: null, skipReason: backend.skipReason, label: `${kind}: skipped`, backend };
  }
  afterAll(() => backend.stop(), 60_000);
  const label = `${kind} via ${backend.server}`;
  console.info(`[holdfast] ${label}: ${backend.url}`);
  return { url: backend.url, skipReason: null, label, backend };
}

const LOCAL_BINARIES = {
  'redis-server': { kind: 'redis', find: redisServerBinary, fix: 'apt-get install redis-server (or `npm run servers:install`)' },
  // Sentinel test servers (startRedisSentinel): Debian's redis-sentinel package.
  'redis-sentinel': {
    kind: 'redis',
    find: async () => onPath('redis-sentinel'),
    fix: 'apt-get install redis-sentinel (or `npm run servers:install`)',
  },
  consul: { kind: 'consul', find: consulBinary, fix: 'run `npm run servers:install`' },
  ferretdb: { kind: 'mongodb', find: ferretdbBinary, fix: 'run `npm run servers:install`' },
  postgres: { kind: 'postgres', find: postgresBinDir, fix: 'apt-get install postgresql (or `npm run servers:install`)' },
  mariadbd: { kind: 'mysql', find: mariadbBinaries, fix: 'apt-get install mariadb-server (or `npm run servers:install`)' },
  etcd: { kind: 'etcd', find: etcdBinary, fix: 'run `npm run servers:install`' },
  etcdctl: { kind: 'etcd', find: etcdctlBinary, fix: 'run `npm run servers:install`' },
  zookeeper: { kind: 'zookeeper', find: zookeeperJar, fix: 'apt-get install zookeeper (or `npm run servers:install`)' },
} as const;

/**
 * For tests that start their own local servers (startRedisSet, startConsulCluster, startPostgres and
 * startMariadb to crash and restart them, interop with the consul CLI): null when the binary is there,
 * else the skip reason (printed). Throws when HOLDFAST_REQUIRE_BACKENDS requires the matching backend.
 */
export async function needLocalBinary(name: keyof typeof LOCAL_BINARIES): Promise<string | null> {
  const spec = LOCAL_BINARIES[name];
  if (await spec.find()) return null;
  const reason = `${name} binary not found: ${spec.fix}`;
  if (isRequired(spec.kind)) throw new Error(`HOLDFAST_REQUIRE_BACKENDS includes ${spec.kind} but the ${reason}`);
  console.warn(`[holdfast] SKIP: ${reason}`);
  return reason;
}
