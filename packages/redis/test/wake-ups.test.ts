import { type RedisSet, startRedisSet } from '@holdfast/test-harness/servers';
import { needLocalBinary, useBackend } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import Redlock from 'redlock';
import { afterAll, describe, expect, test } from 'vitest';
import { createRedisProvider, DEFAULT_PREFIX } from '../src/index.js';

const redis = await useBackend('redis');
// A server of our own for the keyspace-notification case, which changes the server's configuration.
const own: RedisSet | null = (await needLocalBinary('redis-server')) ? null : await startRedisSet(1);
afterAll(() => own?.stop(), 60_000);
let keyCount = 0;
const newKey = (): string => `wake-ups/${process.pid}/${Date.now()}-${++keyCount}`;

describe.skipIf(!redis.url)(`wake-ups (${redis.label})`, () => {
  // A safety re-check interval far beyond the test's bounds: only the event path can pass them.
  const open = () => createRedisProvider({ url: redis.url!, pollIntervalMs: 60_000 });

  test('a release wakes the waiter through pub/sub, not by polling', async () => {
    const [a, b] = [open(), open()];
    try {
      const key = newKey();
      const samples: number[] = [];
      for (let round = 0; round < 20; round++) {
        const held = await a.tryAcquire(key, { ttlMs: 60_000 });
        const waiting = b.acquire(key, { waitMs: 10_000 });
        await new Promise((resolve) => setTimeout(resolve, 20));
        const releasedAt = performance.now();
        await held!.release();
        const next = await waiting;
        samples.push(performance.now() - releasedAt);
        await next.release();
      }
      samples.sort((x, y) => x - y);
      expect(samples[10]!, `handoff ms: ${samples.map(Math.round).join(',')}`).toBeLessThan(50);
      expect(samples[19]!).toBeLessThan(500);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test("an expiry (which publishes nothing) is noticed promptly: the wait is capped by the holder's PTTL", async () => {
    // A holder that can neither renew nor let go (a redlock or crashed one): only the key's expiry frees it.
    const raw = new Redis(redis.url!);
    const b = open();
    try {
      const key = newKey();
      const ttlMs = 800;
      const setAt = performance.now();
      expect(await raw.set(`${DEFAULT_PREFIX}${key}`, 'a foreign holder', 'PX', ttlMs, 'NX')).toBe('OK');
      await b.acquire(key, { waitMs: 10_000 });
      const waited = performance.now() - setAt;
      expect(waited).toBeGreaterThanOrEqual(ttlMs - 50);
      expect(waited).toBeLessThan(ttlMs + 300);
    } finally {
      raw.disconnect();
      await b.close();
    }
  });

  test('a holder whose lease ran out lets go of the key; the waiter gets it no earlier than the holder is told', async () => {
    const [a, b] = [open(), open()];
    try {
      const key = newKey();
      const ttlMs = 800;
      const holder = await a.tryAcquire(key, { ttlMs, autoRenew: false });
      const lock = await b.acquire(key, { waitMs: 10_000 });
      expect(holder!.signal.aborted, 'the waiter was granted before the holder was told').toBe(true);
      await lock.release();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe.skipIf(!redis.url)(`pollIntervalMs (${redis.label})`, () => {
  test('a release that publishes nothing is noticed within pollIntervalMs, not the 2 s default', async () => {
    const redlockClient = new Redis(redis.url!);
    // prefix '': the Redis key is the Holdfast key, the name redlock locks under.
    const locks = createRedisProvider({ url: redis.url!, prefix: '', pollIntervalMs: 200 });
    try {
      const key = newKey();
      const theirs = await new Redlock([redlockClient], { retryCount: 0 }).acquire([key], 60_000);
      const waiting = locks.acquire(key, { waitMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const releasedAt = performance.now();
      await theirs.release();
      await (await waiting).release();
      expect(performance.now() - releasedAt).toBeLessThan(1_000);
    } finally {
      await locks.close();
      await redlockClient.quit();
    }
  });
});

describe.skipIf(!own)('wake-ups with keyspace notifications enabled on the server', () => {
  test('a redlock release (which publishes nothing) wakes a holdfast waiter at once', async () => {
    const url = own!.urls[0]!;
    const admin = new Redis(url);
    const redlockClient = new Redis(url);
    const locks = createRedisProvider({ url, pollIntervalMs: 60_000 });
    try {
      await admin.config('SET', 'notify-keyspace-events', 'Kg');
      const key = newKey();
      const theirs = await new Redlock([redlockClient], { retryCount: 0 }).acquire([key], 60_000);
      const waiting = locks.acquire(key, { waitMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const releasedAt = performance.now();
      await theirs.release();
      await waiting;
      expect(performance.now() - releasedAt).toBeLessThan(500);
    } finally {
      await locks.close();
      await Promise.all([admin.quit(), redlockClient.quit()]);
    }
  });
});
