import { type RedisClusterServers, type RedisSentinelServers, startRedisCluster, startRedisSentinel } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll } from 'vitest';

/** Generous: stopping six servers on a loaded 2-core machine. */
const STOP_BOUND_MS = 60_000;

/** A 6-node Redis Cluster of the file's own, stopped after its tests; null when redis-server is not installed. */
export async function clusterOfTheFile(): Promise<RedisClusterServers | null> {
  if (await needLocalBinary('redis-server')) return null;
  const cluster = await startRedisCluster();
  afterAll(() => cluster.stop(), STOP_BOUND_MS);
  return cluster;
}

/** A primary, a replica and 3 Sentinels of the file's own, stopped after its tests; null without redis-sentinel. */
export async function sentinelOfTheFile(): Promise<RedisSentinelServers | null> {
  if ((await needLocalBinary('redis-server')) || (await needLocalBinary('redis-sentinel'))) return null;
  const servers = await startRedisSentinel();
  afterAll(() => servers.stop(), STOP_BOUND_MS);
  return servers;
}
