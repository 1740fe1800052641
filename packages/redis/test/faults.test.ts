import { ErrorCode, type LockProvider } from '@holdfast/core';
import { codeOf, lostWithin, rejection, until, within } from '@holdfast/test-harness/helpers';
import { type RedisSet, startRedisSet } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { createRedisProvider, DEFAULT_PREFIX } from '../src/index.js';
import { quorumUrl } from './quorum-url.js';

const missing = await needLocalBinary('redis-server');
const five: RedisSet | null = missing ? null : await startRedisSet(5);
const one: RedisSet | null = missing ? null : await startRedisSet(1);
afterAll(() => Promise.all([five?.stop(), one?.stop()]), 60_000);

let keyCount = 0;
const newKey = (): string => `faults/${process.pid}/${Date.now()}-${++keyCount}`;
const providers: LockProvider[] = [];
const open = (url: string): LockProvider => {
  const provider = createRedisProvider({ url });
  providers.push(provider);
  return provider;
};
afterEach(async () => {
  await Promise.allSettled(providers.splice(0).map((provider) => provider.close()));
});

/** The value of the lock key (default prefix) on each node, read directly (null: the node has no such key). */
async function valuesOnNodes(set: RedisSet, key: string): Promise<(string | null)[]> {
  return Promise.all(
    set.urls.map(async (url) => {
      const client = new Redis(url, { lazyConnect: true });
      try {
        await client.connect();
        return await client.get(`${DEFAULT_PREFIX}${key}`);
      } finally {
        client.disconnect();
      }
    }),
  );
}

describe.skipIf(!five)('quorum of 5 under faults', { timeout: 60_000 }, () => {
  const url = five ? quorumUrl(five.urls) : '';

  test('acquire survives 2 nodes down; with 3 down it fails fast with a BackendError, never "busy"', async () => {
    const set = five!;
    try {
      await set.kill(0);
      await set.kill(1);
      const [a, b] = [open(url), open(url)];
      const key = newKey();
      const lock = await a.tryAcquire(key);
      expect(lock).not.toBeNull();
      expect(await b.tryAcquire(key)).toBeNull();
      await lock!.release();
      const again = await b.acquire(key, { waitMs: 2000 });
      await again.release();

      await set.kill(2);
      const started = Date.now();
      const error = await rejection(within(a.tryAcquire(newKey()), 5000, 'tryAcquire with 3 of 5 down'));
      expect(codeOf(error)).toBe(ErrorCode.Backend);
      expect(String((error as Error).message)).toMatch(/3 of 5 nodes failed/);
      expect(Date.now() - started).toBeLessThan(1000);
      expect(codeOf(await rejection(within(a.acquire(newKey(), { waitMs: 500 }), 5000, 'acquire with 3 of 5 down')))).toBe(
        ErrorCode.Backend,
      );
    } finally {
      await Promise.all([0, 1, 2].map((i) => set.restart(i)));
    }
  });

  test('restarting a minority of nodes mid-hold never grants twice; renewal puts the key back on them', async () => {
    const set = five!;
    const [a, b] = [open(url), open(url)];
    const key = newKey();
    const lock = await a.tryAcquire(key, { ttlMs: 1500 });
    expect(lock).not.toBeNull();
    const [value] = await valuesOnNodes(set, key);
    await set.restart(0);
    await set.restart(1);
    // Three nodes kept it; the holder's renewal (every 500 ms) may already have put it back on the others.
    expect((await valuesOnNodes(set, key)).filter((v) => v === value).length).toBeGreaterThanOrEqual(3);
    expect(await b.tryAcquire(key)).toBeNull();
    // The holder's next renewal re-creates the key on the nodes that forgot it.
    await until(async () => (await valuesOnNodes(set, key)).every((v) => v === value), 3000, 'key repaired on all 5 nodes');
    await set.restart(2);
    await set.restart(3);
    expect(await b.tryAcquire(key)).toBeNull();
    expect(await lock!.isHeld()).toBe(true);
    expect(lock!.signal.aborted).toBe(false);
    await lock!.release();
    expect(await b.tryAcquire(key)).not.toBeNull();
  });

  test('documented limit: a majority restarted at once (no persistence) can grant twice; the first holder is told before that', async () => {
    const set = five!;
    const a = open(url);
    const key = newKey();
    const first = await a.tryAcquire(key, { ttlMs: 10_000 });
    await Promise.all([0, 1, 2].map((i) => set.restart(i)));
    const b = open(url);
    const second = await b.tryAcquire(key, { ttlMs: 10_000 });
    expect(second, 'Redlock without delayed restarts: the majority forgot the key').not.toBeNull();
    // Its votes on the restarted nodes went with their connections: told at once, not at the next renewal.
    expect(first!.signal.aborted).toBe(true);
    expect(codeOf(first!.signal.reason)).toBe(ErrorCode.Lost);
    expect(await second!.isHeld()).toBe(true);
  });

  test('a holder whose renewals fail (3 of 5 nodes down) is told through its signal before its lease ends', async () => {
    const set = five!;
    const a = open(url);
    const ttlMs = 1500;
    const lock = await a.tryAcquire(newKey(), { ttlMs });
    const killedAt = Date.now();
    try {
      await Promise.all([2, 3, 4].map((i) => set.kill(i)));
      const reason = await lostWithin(lock!, ttlMs + 1000);
      expect(codeOf(reason)).toBe(ErrorCode.Lost);
      expect(Date.now() - killedAt).toBeLessThan(ttlMs);
    } finally {
      await Promise.all([2, 3, 4].map((i) => set.restart(i)));
    }
  });
});

describe.skipIf(!one)('single node under faults', { timeout: 60_000 }, () => {
  test('a dead server: holders are told, calls fail fast with BackendError; after a restart that lost the data, tokens still increase', async () => {
    const set = one!;
    const url = set.urls[0]!;
    const locks = open(url);
    const key = newKey();
    const ttlMs = 1000;
    const lock = await locks.tryAcquire(key, { ttlMs });
    const before = lock!.token;
    await set.kill(0);
    try {
      expect(codeOf(await lostWithin(lock!, ttlMs + 500))).toBe(ErrorCode.Lost);
      const started = Date.now();
      expect(codeOf(await rejection(within(locks.tryAcquire(newKey()), 5000, 'tryAcquire of a dead server')))).toBe(ErrorCode.Backend);
      expect(Date.now() - started).toBeLessThan(500);
    } finally {
      await set.restart(0);
    }
    const fresh = open(url);
    const after = await fresh.tryAcquire(key);
    expect(after).not.toBeNull();
    expect(after!.token).toBeGreaterThan(before);
  });
});
