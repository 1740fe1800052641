import { ErrorCode, type LockProvider } from '@holdfast/core';
import { codeOf, lostWithin, timed, until } from '@holdfast/test-harness/helpers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { createRedisProvider, type RedisProviderOptions } from '../src/index.js';
import { type RedisProcess, startRedisProcess } from './redis-process.js';

// Semaphore slots under a stopped or restarted server: a slot grant whose answer never arrived is
// undone, and a slot lives on the connection it was granted on, like a lock.

const missing = await needLocalBinary('redis-server');
const server: RedisProcess | null = missing ? null : await startRedisProcess();
afterAll(async () => {
  server?.resume();
  await server?.stop();
}, 30_000);

let keyCount = 0;
const newKey = (): string => `semaphore-faults/${process.pid}/${Date.now()}-${++keyCount}`;
const providers: LockProvider[] = [];
const open = (options: Partial<RedisProviderOptions> = {}): LockProvider => {
  const provider = createRedisProvider({ url: server!.url, ...options });
  providers.push(provider);
  return provider;
};
afterEach(async () => {
  server?.resume();
  await Promise.allSettled(providers.splice(0).map((provider) => provider.close()));
});

describe.skipIf(!server)('semaphore slots on a stopped or restarted server', { timeout: 30_000 }, () => {
  test('a slot grant abandoned while the server was stopped is undone once it resumes: the slot is free again', async () => {
    const key = newKey();
    const locks = open({ callTimeoutMs: 300 });
    const observer = open().semaphore(key, 1);
    expect(await observer.holders()).toEqual([]);
    server!.pause();
    const { error } = await timed(locks.semaphore(key, 1).tryAcquire({ ttlMs: 30_000 }), 3000, 'tryAcquire of a slot');
    expect(codeOf(error)).toBe(ErrorCode.Backend);
    server!.resume();
    // The queued take runs first, core's abandon (an owner-checked slot release) right after it on the
    // same connection: once the take has bumped the key's fence counter, the release has run too.
    const raw = new Redis(server!.url);
    try {
      await until(async () => (await raw.exists(`{holdfast:${key}}//fence`)) === 1, 3000, 'the late slot grant lands', { everyMs: 20 });
    } finally {
      raw.disconnect();
    }
    expect(await observer.holders(), 'the late slot grant is still held').toEqual([]);
    const next = await observer.tryAcquire();
    expect(next, "the late grant's slot is still taken").not.toBeNull();
    await next!.release();
  });

  test('a restart without persistence forgets the slots: their holders are told at once, before anyone else takes one', async () => {
    const key = newKey();
    const holding = open();
    const slots = [
      await holding.semaphore(key, 2).tryAcquire({ ttlMs: 30_000 }),
      await holding.semaphore(key, 2).tryAcquire({ ttlMs: 30_000 }),
    ];
    expect(slots.every((slot) => slot !== null)).toBe(true);
    await server!.restart();
    for (const slot of slots) {
      const reason = await lostWithin(slot!, 2000, 'a slot holder is told its connection dropped');
      expect((reason as Error).message).toMatch(/connection to redis 127\.0\.0\.1:\d+ dropped/);
    }
    // The forgotten slots are free at once on the restarted server; their holders knew first.
    const next = await open().semaphore(key, 2).tryAcquire();
    expect(next).not.toBeNull();
    await next!.release();
  });
});
