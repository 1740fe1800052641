import type { Lock, LockProvider } from '@holdfast/core';
import { within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';

// fairness: 'barging' (one server): waiters still queue on the server, so that a release tells one
// of them (no herd), but a free key goes to whoever asks first, in turn or not.

const redis = await useBackend('redis');
const admin = redis.url ? new Redis(redis.url) : undefined;
afterAll(() => admin?.disconnect());
const providers: LockProvider[] = [];
afterEach(async () => {
  await Promise.allSettled(providers.splice(0).map((provider) => provider.close()));
});

describe.skipIf(!redis.url)(`fairness: 'barging' (${redis.label})`, { timeout: 20_000 }, () => {
  test('12 waiters in 4 providers are all granted, woken by releases (not polls), with rising tokens', async () => {
    // A poll would come after 10 s: only wake-ups can finish this within the bound.
    const barging = Array.from({ length: 4 }, () => createRedisProvider({ url: redis.url!, fairness: 'barging', pollIntervalMs: 10_000 }));
    providers.push(...barging);
    const key = `barging/${process.pid}/${Date.now()}`;
    const first = await barging[0]!.tryAcquire(key);
    let holding = 0;
    let overlaps = 0;
    const tokens: bigint[] = [first!.token];
    const waiters = Array.from({ length: 12 }, async (_, i) => {
      const lock: Lock = await barging[i % 4]!.acquire(key, { waitMs: 15_000 });
      if (++holding > 1) overlaps++;
      tokens.push(lock.token);
      await new Promise((resolve) => setTimeout(resolve, 5));
      holding--;
      await lock.release();
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await first!.release();
    await within(Promise.all(waiters), 5000, 'every waiter granted, woken by the releases');
    expect(overlaps).toBe(0);
    expect(tokens.length).toBe(13);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]!).toBeGreaterThan(tokens[i - 1]!);
  });

  test('a free key goes to a barging attempt while another waiter is next, where FIFO refuses it', async () => {
    const key = `barging/${process.pid}/${Date.now()}-next`;
    // A live waiter at the head of the key's queue (its entry expires in 10 s), the key itself free.
    await admin!.zadd(`{holdfast:${key}}//queue`, 1, 'someone/else');
    await admin!.hset(`{holdfast:${key}}//queue-expiries`, 'someone/else', String(Date.now() + 10_000));
    const fifo = createRedisProvider({ url: redis.url! });
    const barging = createRedisProvider({ url: redis.url!, fairness: 'barging' });
    providers.push(fifo, barging);
    expect(await fifo.tryAcquire(key), "FIFO: it is the other waiter's turn").toBeNull();
    const lock = await barging.tryAcquire(key);
    expect(lock, 'barging: whoever asks first').not.toBeNull();
    await lock!.release();
    await admin!.del(`{holdfast:${key}}//queue`, `{holdfast:${key}}//queue-expiries`);
  });

  test('a fairness other than fifo or barging is refused before anything connects', () => {
    expect(() => createRedisProvider({ url: redis.url!, fairness: 'random' as 'fifo' })).toThrow(/fairness/);
  });
});
