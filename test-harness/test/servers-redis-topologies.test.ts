// The Redis Cluster and Sentinel test servers: really a cluster of 3 primaries and 3 replicas, really
// a primary, a replica and Sentinels that fail over; and nothing left running after stop().
import { afterAll, describe, expect, it } from 'vitest';
import { infoFields, redisCli, startRedisCluster, startRedisSentinel } from '../src/servers/index.js';
import { redisPing } from '../src/servers/probes.js';
import { needLocalBinary } from '../src/servers/vitest.js';

const noRedis = await needLocalBinary('redis-server');
const noSentinel = noRedis ?? (await needLocalBinary('redis-sentinel'));

const alive = (port: number): Promise<boolean> => redisPing('127.0.0.1', port).catch(() => false);

describe.skipIf(noRedis)('redis cluster test servers', () => {
  it('runs 3 primaries with one replica each, every slot served, and fails a killed primary over', async () => {
    const cluster = await startRedisCluster();
    afterAll(() => cluster.stop(), 60_000);
    const nodes = await cluster.nodes();
    expect(nodes.filter((n) => n.role === 'primary')).toHaveLength(3);
    expect(nodes.filter((n) => n.role === 'replica')).toHaveLength(3);
    expect(cluster.url).toMatch(/^redis\+cluster:\/\/(127\.0\.0\.1:\d+,){5}127\.0\.0\.1:\d+$/);
    const owner = await cluster.primaryOf(0);
    await redisCli(owner, ['set', '{a}', 'x']);
    await cluster.kill(owner);
    await cluster.waitHealthy(30_000);
    const promoted = await cluster.primaryOf(0);
    expect(promoted).not.toBe(owner);
    await cluster.restart(owner);
    await cluster.waitHealthy(30_000);
    const back = (await cluster.nodes()).find((n) => n.port === owner);
    expect(back?.role).toBe('replica');
    await cluster.stop();
    for (const port of cluster.ports) expect(await alive(port)).toBe(false);
  }, 120_000);
});

describe.skipIf(noSentinel)('redis sentinel test servers', () => {
  it('runs a primary and a replica watched by 3 Sentinels, fails over on request, and stops everything', async () => {
    const sentinel = await startRedisSentinel();
    afterAll(() => sentinel.stop(), 60_000);
    const first = await sentinel.primary();
    expect(first).toBe(sentinel.dataPorts[0]);
    expect(infoFields(await redisCli(first, ['info', 'replication'])).get('connected_slaves')).toBe('1');
    await sentinel.failover();
    await sentinel.waitHealthy(30_000);
    expect(await sentinel.primary()).toBe(sentinel.dataPorts[1]);
    await sentinel.stop();
    for (const port of [...sentinel.dataPorts, ...sentinel.sentinelPorts]) expect(await alive(port)).toBe(false);
  }, 120_000);
});
