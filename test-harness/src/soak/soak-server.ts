import { startRedisSet } from '../servers/redis.js';
import { startRedisCluster } from '../servers/redis-cluster.js';
import { startRedisSentinel } from '../servers/redis-sentinel.js';
import { resolveBackend } from '../servers/resolve.js';
import { BACKEND_KINDS, type BackendKind } from '../servers/types.js';

/**
 * The Redis topologies the soak runs on besides one server: a Redlock quorum of three servers, a
 * Cluster of 3 primaries and 3 replicas, and a primary with a replica behind three Sentinels. Each is
 * started here on free loopback ports (no environment URL or container for them).
 */
export const REDIS_TOPOLOGIES = ['redis-quorum', 'redis-cluster', 'redis-sentinel'] as const;
export type RedisTopology = (typeof REDIS_TOPOLOGIES)[number];

/** What `npm run soak` can run against: a backend kind, or one of the Redis topologies. */
export type SoakTarget = BackendKind | RedisTopology;

export const SOAK_TARGETS: readonly SoakTarget[] = [...BACKEND_KINDS, ...REDIS_TOPOLOGIES];

export function isSoakTarget(name: string | undefined): name is SoakTarget {
  return (SOAK_TARGETS as readonly (string | undefined)[]).includes(name);
}

export interface SoakServer {
  readonly url: string;
  /** What is behind the URL, for the report. */
  readonly server: string;
  stop(): Promise<void>;
}

/** Starts (or finds, for a backend kind: resolveBackend) the servers of a soak target. */
export async function startSoakServer(target: SoakTarget): Promise<SoakServer> {
  switch (target) {
    case 'redis-quorum': {
      const set = await startRedisSet(3);
      const [first, ...others] = set.urls.map((url) => new URL(url).host);
      return {
        url: `redis://${first}?quorum=${others.join(',')}`,
        server: 'a Redlock quorum of 3 local redis-server',
        stop: () => set.stop(),
      };
    }
    case 'redis-cluster': {
      const cluster = await startRedisCluster();
      return { url: cluster.url, server: 'a local Redis Cluster of 3 primaries and 3 replicas', stop: () => cluster.stop() };
    }
    case 'redis-sentinel': {
      const sentinel = await startRedisSentinel();
      return { url: sentinel.url, server: 'a local Redis primary and replica behind 3 Sentinels', stop: () => sentinel.stop() };
    }
    default: {
      const backend = await resolveBackend(target);
      if (backend.url === null) throw new Error(backend.skipReason);
      return { url: backend.url, server: backend.server, stop: () => backend.stop() };
    }
  }
}
