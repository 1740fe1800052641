import { ErrorCode, type LockProvider } from '@holdfast/core';
import { type RedisSet, startRedisSet } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import Redlock, { ExecutionError } from 'redlock';
import { afterAll, describe, expect, test } from 'vitest';
import { createRedisProvider, FOREIGN_OWNER } from '../src/index.js';
import { quorumUrl } from './quorum-url.js';

const missing = await needLocalBinary('redis-server');
const set: RedisSet | null = missing ? null : await startRedisSet(3);
afterAll(() => set?.stop(), 60_000);

let keyCount = 0;
const newKey = (): string => `interop/${process.pid}/${Date.now()}-${++keyCount}`;

/** Same resources, two libraries: redlock with `clients`, holdfast with `url` and the interop setting `prefix: ''`. */
function modes(urls: string[]) {
  return [
    { mode: 'single node', url: urls[0]!, clientUrls: urls.slice(0, 1) },
    { mode: 'quorum of 3', url: quorumUrl(urls), clientUrls: urls },
  ];
}

describe.skipIf(!set)('interoperability with the redlock package (5.0.0-beta.2)', () => {
  describe.each(set ? modes(set.urls) : [])('$mode', ({ url, clientUrls }) => {
    const clients: Redis[] = [];
    const providers: LockProvider[] = [];
    afterAll(async () => {
      await Promise.all(providers.map((provider) => provider.close()));
      await Promise.all(clients.map((client) => client.quit()));
    });
    const redlock = (): Redlock => {
      const own = clientUrls.map((clientUrl) => new Redis(clientUrl));
      clients.push(...own);
      // No retries: one attempt, like tryAcquire.
      return new Redlock(own, { retryCount: 0 });
    };
    const holdfast = (prefix: string | 'default' = ''): LockProvider => {
      const provider = createRedisProvider({ url, ...(prefix === 'default' ? {} : { prefix }) });
      providers.push(provider);
      return provider;
    };

    test('a holdfast holder excludes redlock; after release redlock gets it', async () => {
      const key = newKey();
      const lock = await holdfast().tryAcquire(key, { ttlMs: 10_000 });
      expect(lock).not.toBeNull();
      await expect(redlock().acquire([key], 5000)).rejects.toBeInstanceOf(ExecutionError);
      await lock!.release();
      const theirs = await redlock().acquire([key], 5000);
      await theirs.release();
    });

    test('a redlock holder excludes holdfast; inspect shows a foreign holder; its release frees the key', async () => {
      const key = newKey();
      const locks = holdfast();
      const theirs = await redlock().acquire([key], 10_000);
      expect(await locks.tryAcquire(key)).toBeNull();
      const info = await locks.inspect(key);
      expect(info?.owner).toBe(FOREIGN_OWNER);
      expect(info?.details?.['value']).toBe(theirs.value);
      const waiting = locks.acquire(key, { waitMs: 10_000 });
      await theirs.release();
      // redlock publishes nothing: the waiter notices by its safety re-check (2 s by default).
      const mine = await waiting;
      expect((await locks.inspect(key))?.owner).toBe(locks.owner);
      await mine.release();
    });

    test("neither library can release or extend the other one's lock", async () => {
      const key = newKey();
      const locks = holdfast();
      const stale = await redlock().acquire([key], 300);
      // The redlock lock expires; holdfast takes the key.
      const mine = await locks.acquire(key, { waitMs: 5000, ttlMs: 10_000 });
      await expect(stale.release()).rejects.toBeInstanceOf(ExecutionError);
      await expect(stale.extend(10_000)).rejects.toBeInstanceOf(ExecutionError);
      expect(await mine.isHeld()).toBe(true);

      await mine.release();
      const expiring = await locks.tryAcquire(key, { ttlMs: 300, autoRenew: false });
      const theirs = await acquireWithin(redlock(), key, 5000);
      expect(((await expiring!.extend().catch((error: unknown) => error)) as { code?: string }).code).toBe(ErrorCode.Lost);
      await expiring!.release();
      await expect(theirs.extend(10_000)).resolves.toBeDefined();
      await theirs.release();
    });

    test('by default Holdfast keys live under "holdfast:": redlock on the bare name is another lock, on the prefixed name the same', async () => {
      const key = newKey();
      const lock = await holdfast('default').tryAcquire(key);
      expect(lock).not.toBeNull();
      const bare = await redlock().acquire([key], 5000);
      await bare.release();
      await expect(redlock().acquire([`holdfast:${key}`], 5000)).rejects.toBeInstanceOf(ExecutionError);
      await lock!.release();
    });

    test('with a prefix, the Redis key (and redlock resource) is prefix + key', async () => {
      const key = newKey();
      const lock = await holdfast('app:').tryAcquire(key);
      await expect(redlock().acquire([`app:${key}`], 5000)).rejects.toBeInstanceOf(ExecutionError);
      const other = await redlock().acquire([key], 5000);
      await other.release();
      await lock!.release();
    });
  });
});

/** redlock with retries, for a key that is about to expire. */
async function acquireWithin(redlock: Redlock, key: string, withinMs: number) {
  return redlock.acquire([key], 10_000, { retryCount: Math.ceil(withinMs / 100), retryDelay: 100, retryJitter: 0 });
}
