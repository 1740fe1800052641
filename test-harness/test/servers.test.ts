// Smoke tests for the real-server tooling: each backend is really reachable and behaves like the
// server the adapters target. With HOLDFAST_REQUIRE_BACKENDS=all a missing server fails the run.
import { MongoClient, MongoServerError } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { type ConsulCluster, type RedisSet, startConsulCluster, startRedisSet } from '../src/servers/index.js';
import { redisPing } from '../src/servers/probes.js';
import { needLocalBinary, useBackend } from '../src/servers/vitest.js';
import { pollUntil } from '../src/servers/wait.js';

const hostPort = (url: string): { host: string; port: number } => {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
};
const consulHttp = (url: string): string => url.replace(/^consul:/, 'http:');

const redis = await useBackend('redis');
describe.skipIf(!redis.url)(`redis (${redis.label})`, () => {
  it('answers PING', async () => {
    const { host, port } = hostPort(redis.url!);
    expect(await redisPing(host, port)).toBe(true);
  });
});

const consul = await useBackend('consul');
describe.skipIf(!consul.url)(`consul (${consul.label})`, () => {
  it('has a leader and round-trips a KV entry', async () => {
    const http = consulHttp(consul.url!);
    const leader = (await (await fetch(`${http}/v1/status/leader`)).json()) as string;
    expect(leader).not.toBe('');
    const key = `holdfast-smoke/${process.pid}-${Date.now()}`;
    const put = await fetch(`${http}/v1/kv/${key}`, { method: 'PUT', body: 'hello' });
    expect(await put.json()).toBe(true);
    const got = await fetch(`${http}/v1/kv/${key}?raw`);
    expect(await got.text()).toBe('hello');
    await fetch(`${http}/v1/kv/${key}`, { method: 'DELETE' });
  });
});

const mongo = await useBackend('mongodb');
describe.skipIf(!mongo.url)(`mongodb wire protocol (${mongo.label})`, () => {
  const client = mongo.url ? new MongoClient(mongo.url, { serverSelectionTimeoutMS: 10_000 }) : null;
  afterAll(() => client?.close());

  it('answers hello', async () => {
    const reply = await client!.db('admin').command({ hello: 1 });
    expect(reply['ok']).toBe(1);
    expect(reply['isWritablePrimary']).toBe(true);
  });

  it('fails racing upserts on an existing _id with E11000', async () => {
    const coll = client!.db().collection<{ _id: string; state: number }>(`smoke_${process.pid}_${Date.now()}`);
    await coll.insertOne({ _id: 'k', state: 2 });
    // The filter does not match the existing document, so each upsert tries to insert _id 'k'.
    const race = await Promise.allSettled(
      [0, 1].map(() => coll.findOneAndUpdate({ _id: 'k', state: 0 }, { $set: { state: 1 } }, { upsert: true })),
    );
    for (const r of race) {
      expect(r.status).toBe('rejected');
      const err = (r as PromiseRejectedResult).reason as unknown;
      expect(err).toBeInstanceOf(MongoServerError);
      expect((err as MongoServerError).code).toBe(11000);
    }
    expect(await coll.findOne({ _id: 'k' })).toEqual({ _id: 'k', state: 2 });
    await coll.drop();
  });
});

const noConsulBinary = await needLocalBinary('consul');
describe.skipIf(noConsulBinary !== null)('local 3-node consul cluster', () => {
  let cluster: ConsulCluster | undefined;
  afterAll(() => cluster?.stop(), 60_000);

  it('forms, survives killing its leader, and takes the old leader back', async () => {
    cluster = await startConsulCluster(3);
    const first = await cluster.leaderIndex();
    expect(cluster.httpUrls).toHaveLength(3);

    await cluster.kill(first);
    const second = await cluster.waitForLeader();
    expect(second).not.toBe(first);
    const put = await fetch(`${cluster.httpUrls[second]}/v1/kv/holdfast-smoke/after-failover`, { method: 'PUT', body: 'x' });
    expect(await put.json()).toBe(true);

    await cluster.restart(first);
    await cluster.waitForLeader();
    // The restarted member catches up through Raft; a stale read answers from its own state.
    const restarted = `${cluster.httpUrls[first]}/v1/kv/holdfast-smoke/after-failover?raw&stale`;
    await pollUntil('the restarted member to have the entry', async () => (await fetch(restarted)).status === 200, 30_000);
  }, 180_000);
});

const noRedisBinary = await needLocalBinary('redis-server');
describe.skipIf(noRedisBinary !== null)('local redis set', () => {
  let set: RedisSet | undefined;
  afterAll(() => set?.stop());

  it('starts independent instances that can be killed and restarted on the same port', async () => {
    set = await startRedisSet(3);
    expect(new Set(set.urls).size).toBe(3);
    const [a, b] = [hostPort(set.urls[0]!), hostPort(set.urls[1]!)];
    await set.kill(0);
    await expect(redisPing(a.host, a.port)).rejects.toThrow();
    expect(await redisPing(b.host, b.port)).toBe(true);
    await set.restart(0);
    expect(await redisPing(a.host, a.port)).toBe(true);
  }, 30_000);
});
