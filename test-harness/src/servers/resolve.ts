import { consulBinary, etcdBinary, ferretdbBinary, mariadbBinaries, postgresBinDir, redisServerBinary } from './binaries.js';
import { startConsulDev } from './consul.js';
import { containerRuntimeUnavailable, startContainer } from './containers.js';
import { startEtcd } from './etcd.js';
import { startFerretdb } from './ferretdb.js';
import { startMariadb } from './mariadb.js';
import { startPostgres } from './postgres.js';
import { startRedis } from './redis.js';
import { isRequired } from './require.js';
import type { BackendKind, ResolvedBackend } from './types.js';
import { serverVersions } from './versions.js';
import { startZookeeper, zookeeperJar } from './zookeeper.js';

export const URL_ENV: Record<BackendKind, string> = {
  redis: 'HOLDFAST_TEST_REDIS_URL',
  mongodb: 'HOLDFAST_TEST_MONGODB_URL',
  consul: 'HOLDFAST_TEST_CONSUL_URL',
  postgres: 'HOLDFAST_TEST_POSTGRES_URL',
  mysql: 'HOLDFAST_TEST_MYSQL_URL',
  etcd: 'HOLDFAST_TEST_ETCD_URL',
  zookeeper: 'HOLDFAST_TEST_ZOOKEEPER_URL',
};

const URL_EXAMPLE: Record<BackendKind, string> = {
  redis: 'redis://127.0.0.1:6379',
  mongodb: 'mongodb://127.0.0.1:27017/holdfast',
  consul: 'consul://127.0.0.1:8500',
  postgres: 'postgres://user:password@127.0.0.1:5433/holdfast_test',
  mysql: 'mysql://user:password@127.0.0.1:3307/holdfast_test',
  etcd: 'etcd://127.0.0.1:2379,127.0.0.1:22379',
  zookeeper: 'zookeeper://127.0.0.1:2181,127.0.0.1:2182',
};

interface LocalRecipe {
  binary: () => Promise<string | null>;
  missing: string;
  start: () => Promise<{ url: string; stop(): Promise<void> }>;
  describe: (binary: string) => string;
}

const LOCAL: Record<BackendKind, LocalRecipe> = {
  redis: { binary: redisServerBinary, missing: 'redis-server is not on PATH', start: startRedis, describe: (bin) => `local ${bin}` },
  mongodb: {
    binary: ferretdbBinary,
    missing: 'no ferretdb binary in the servers cache or on PATH',
    start: () => startFerretdb(),
    describe: (bin) => `local FerretDB, SQLite backend, not mongod (${bin})`,
  },
  consul: {
    binary: consulBinary,
    missing: 'no consul binary in the servers cache or on PATH',
    start: startConsulDev,
    describe: (bin) => `local consul agent -dev (${bin})`,
  },
  postgres: {
    binary: postgresBinDir,
    missing: 'no PostgreSQL binaries (/usr/lib/postgresql/<major>/bin or initdb on PATH)',
    start: startPostgres,
    describe: (bin) => `local postgres of our own (${bin})`,
  },
  mysql: {
    binary: async () => (await mariadbBinaries())?.server ?? null,
    missing: 'no mariadbd / mariadb-install-db',
    start: startMariadb,
    describe: (bin) => `local mariadbd of our own (${bin})`,
  },
  etcd: {
    binary: etcdBinary,
    missing: 'no etcd binary in the servers cache or on PATH',
    start: startEtcd,
    describe: (bin) => `local etcd member of our own (${bin})`,
  },
  zookeeper: {
    binary: zookeeperJar,
    missing: 'no java or no ZooKeeper jar (Debian package zookeeper)',
    start: startZookeeper,
    describe: (jar) => `local standalone ZooKeeper of our own (${jar})`,
  },
};

function containersDisabled(): boolean {
  return ['0', 'false', 'no', 'off'].includes((process.env['HOLDFAST_TEST_CONTAINERS'] ?? '').toLowerCase());
}

/**
 * A running server of the given kind, found in this order: a URL from the environment, a container
 * (testcontainers, when a container runtime works), a local binary started on free loopback ports.
 * Otherwise `{ url: null, skipReason }`, or an Error when HOLDFAST_REQUIRE_BACKENDS names the kind.
 * The caller owns the result and must call stop() (a no-op for URLs from the environment).
 */
export async function resolveBackend(kind: BackendKind): Promise<ResolvedBackend> {
  const fromEnv = process.env[URL_ENV[kind]]?.trim();
  if (fromEnv) {
    return { kind, url: fromEnv, source: 'env', server: `${URL_ENV[kind]}`, stop: async () => {} };
  }

  const notes: string[] = [];
  const noRuntime = containersDisabled() ? 'disabled by HOLDFAST_TEST_CONTAINERS=0' : await containerRuntimeUnavailable();
  if (noRuntime === null) {
    try {
      const c = await startContainer(kind);
      return { kind, url: c.url, source: 'container', server: `container ${serverVersions().containers[kind]}`, stop: c.stop };
    } catch (err) {
      notes.push(`container failed to start: ${err instanceof Error ? err.message : String(err)}`);
    }
  } else {
    notes.push(`no container runtime (${noRuntime})`);
  }

  const local = LOCAL[kind];
  const binary = await local.binary();
  if (binary) {
    // A binary that is there but does not start is a real failure, not a reason to skip.
    const s = await local.start();
    return { kind, url: s.url, source: 'local', server: local.describe(binary), stop: s.stop };
  }
  notes.push(local.missing);

  const skipReason =
    `no ${kind} backend (${notes.join('; ')}). Provide one: set ${URL_ENV[kind]}=${URL_EXAMPLE[kind]}, ` +
    'or make Docker available to testcontainers, or run `npm run servers:install` (see docs/testing.md)';
  if (isRequired(kind)) throw new Error(`HOLDFAST_REQUIRE_BACKENDS includes ${kind} but there is ${skipReason}`);
  return { kind, url: null, skipReason };
}
