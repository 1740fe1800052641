import { createLockProvider, ErrorCode, type LockProvider } from '@holdfast/core';
import { until } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';

// What Holdfast writes to Redis: its own namespace, the db it was given, and nothing that looks like
// a holder once a lock is released or has lapsed.

const redis = await useBackend('redis');

let keyCount = 0;
const newKey = (): string => `keys/${process.pid}/${Date.now()}-${++keyCount}`;
const providers: LockProvider[] = [];
const track = <T extends LockProvider>(provider: T): T => {
  providers.push(provider);
  return provider;
};
const raw = redis.url ? new Redis(redis.url) : undefined;
afterEach(async () => {
  await Promise.allSettled(providers.splice(0).map((provider) => provider.close()));
});
afterAll(() => raw?.disconnect());

/** Every Redis key whose name starts with `prefix` or with `{prefix` (a lock's hash-tagged companions), with its type and (for hashes) its fields. */
async function keysUnder(prefix: string, client = raw!): Promise<Record<string, string[] | string>> {
  const found: Record<string, string[] | string> = {};
  for (const start of [prefix, `{${prefix}`]) {
    let cursor = '0';
    do {
      const [next, names] = await client.scan(cursor, 'MATCH', `${start.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 1000);
      cursor = next;
      for (const name of names) {
        found[name] = (await client.type(name)) === 'hash' ? Object.keys(await client.hgetall(name)).sort() : await client.type(name);
      }
    } while (cursor !== '0');
  }
  return found;
}

describe.skipIf(!redis.url)(`keys in Redis (${redis.label})`, { timeout: 20_000 }, () => {
  const url = redis.url!;

  test('a lock that lapsed unreleased, or was released, leaves only its fence counter; tokens keep increasing', async () => {
    const locks = track(createRedisProvider({ url }));
    const key = newKey();
    const lapsing = await locks.tryAcquire(key, { ttlMs: 150, autoRenew: false, reason: 'lapse test' });
    expect(lapsing).not.toBeNull();
    // One server keeps the holder record in the lock key's value: no holder hash.
    expect(await keysUnder(`holdfast:${key}`)).toEqual({
      [`holdfast:${key}`]: 'string',
      [`{holdfast:${key}}//fence`]: ['fence'],
    });
    await until(async () => (await raw!.exists(`holdfast:${key}`)) === 0, 3000, 'the lock key expires');
    expect(await keysUnder(`holdfast:${key}`)).toEqual({ [`{holdfast:${key}}//fence`]: ['fence'] });
    expect(await locks.inspect(key)).toBeNull();

    const next = await locks.tryAcquire(key);
    expect(next!.token).toBeGreaterThan(lapsing!.token);
    await next!.release();
    expect(await keysUnder(`holdfast:${key}`)).toEqual({ [`{holdfast:${key}}//fence`]: ['fence'] });
    const third = await locks.tryAcquire(key);
    expect(third!.token).toBeGreaterThan(next!.token);
    await locks.forceRelease(key);
    expect(await keysUnder(`holdfast:${key}`)).toEqual({ [`{holdfast:${key}}//fence`]: ['fence'] });
  });

  test('the holder record is the lock key itself: renewed with it, gone with it', async () => {
    const locks = track(createRedisProvider({ url }));
    const key = newKey();
    const lock = await locks.tryAcquire(key, { ttlMs: 300, reason: 'record test' });
    const value = await raw!.get(`holdfast:${key}`);
    const [, record] = value!.split('\n');
    expect(JSON.parse(record!)).toEqual([lock!.acquiredAt.getTime(), locks.owner, 'record test']);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(lock!.signal.aborted).toBe(false);
    const info = await locks.inspect(key);
    expect(info).toMatchObject({ owner: locks.owner, reason: 'record test', token: lock!.token, acquiredAt: lock!.acquiredAt });
    await lock!.release();
    expect(await raw!.exists(`holdfast:${key}`)).toBe(0);
  });

  test("by default an app's own data key of the same name does not make the lock busy", async () => {
    const key = newKey();
    await raw!.set(key, 'application data');
    try {
      const locks = track(createRedisProvider({ url }));
      const lock = await locks.tryAcquire(key);
      expect(lock).not.toBeNull();
      expect(await raw!.get(key)).toBe('application data');
      await lock!.release();
      // The interop setting (no prefix) shares the namespace, as redlock does.
      const shared = track(createRedisProvider({ url: `${url}?prefix=` }));
      expect(await shared.tryAcquire(key)).toBeNull();
    } finally {
      await raw!.del(key);
    }
  });

  test('createLockProvider honours options.adapter (prefix) and rejects what it does not know', async () => {
    const locks = track(await createLockProvider(url, { adapter: { prefix: 'app1:' } }));
    const key = newKey();
    const lock = await locks.tryAcquire(key);
    expect(await raw!.get(`app1:${key}`)).not.toBeNull();
    expect(await raw!.exists(`holdfast:${key}`)).toBe(0);
    await lock!.release();
    await expect(createLockProvider(url, { adapter: { prefixx: 'app1:' } })).rejects.toMatchObject({ code: ErrorCode.InvalidArgument });
  });

  test('the db in the URL is used, and one the server refuses is an InvalidArgumentError, never db 0', async () => {
    const inThree = track(createRedisProvider({ url: `${url}/3` }));
    const key = newKey();
    const lock = await inThree.tryAcquire(key);
    const dbThree = new Redis(`${url}/3`);
    try {
      expect(await dbThree.get(`holdfast:${key}`)).not.toBeNull();
      expect(await raw!.exists(`holdfast:${key}`)).toBe(0);
    } finally {
      dbThree.disconnect();
    }
    await lock!.release();

    const refused = track(createRedisProvider({ url: `${url}/99` }));
    const started = Date.now();
    await expect(refused.tryAcquire(key)).rejects.toMatchObject({
      code: ErrorCode.InvalidArgument,
      message: expect.stringMatching(/database 99/),
    });
    // Not retried as a transient failure: a waiting acquire fails at once too.
    await expect(refused.acquire(key, { waitMs: 5000 })).rejects.toMatchObject({ code: ErrorCode.InvalidArgument });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await raw!.exists(`holdfast:${key}`)).toBe(0);
  });
});
