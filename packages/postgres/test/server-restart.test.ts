// A PostgreSQL server of our own, crashed (immediate shutdown: backends killed, no checkpoint) and
// restarted on the same port and data dir while locks are held and waited for.
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { codeOf, lostWithin, rejection, until, within } from '@holdfast/test-harness/helpers';
import { type LocalDatabase, startPostgres } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { createPostgresProvider, type PostgresProviderOptions } from '../src/index.js';
import { connectionsOf, named } from './activity.js';

const missing = await needLocalBinary('postgres');
const server: LocalDatabase | null = missing ? null : await startPostgres();
afterAll(() => server?.stop(), 60_000);

let count = 0;
const newKey = (): string => `restart/${process.pid}/${++count}`;
const providers: LockProvider[] = [];
const open = (options: Omit<PostgresProviderOptions, 'url'> = {}, name = 'holdfast-test'): LockProvider => {
  const provider = createPostgresProvider({ url: named(server!.url, name), callTimeoutMs: 1000, ...options });
  providers.push(provider);
  return provider;
};
afterEach(async () => {
  await Promise.allSettled(providers.splice(0).map((provider) => provider.close()));
});

describe.skipIf(!server)('postgres server crash and restart', { timeout: 60_000 }, () => {
  test('the lock row survives a crash: the holder keeps it, outage calls fail as BackendError (never busy), tokens keep rising', async () => {
    const [a, b] = [open(), open()];
    const key = newKey();
    const lock = await a.tryAcquire(key, { ttlMs: 8000 });
    expect(lock).not.toBeNull();
    await server!.kill();
    try {
      const started = Date.now();
      const error = await rejection(within(b.tryAcquire(key), 5000, 'tryAcquire while the server is down'));
      expect(codeOf(error)).toBe(ErrorCode.Backend);
      expect(Date.now() - started).toBeLessThan(1500);
    } finally {
      await server!.restart();
    }
    expect(await within(b.tryAcquire(key), 5000, 'tryAcquire after the restart')).toBeNull();
    expect(await within(lock!.isHeld(), 5000, 'isHeld after the restart')).toBe(true);
    expect(lock!.signal.aborted).toBe(false);
    await lock!.release();
    const next = await within(b.tryAcquire(key), 5000, 'tryAcquire after the release');
    expect(next).not.toBeNull();
    expect(next!.token).toBeGreaterThan(lock!.token);
    await next!.release();
  });

  test('session mode: a server crash tells every session holder at once (TTL 30 s); after the restart the keys are free and tokens keep rising', async () => {
    const provider = open({ mode: 'session' });
    const keys = [newKey(), newKey()];
    const locks = await Promise.all(keys.map((key) => provider.tryAcquire(key, { ttlMs: 30_000 })));
    await server!.kill();
    const crashedAt = performance.now();
    try {
      await Promise.all(locks.map((lock) => lostWithin(lock!, 2000, 'a session holder is told of the crash')));
      expect(performance.now() - crashedAt).toBeLessThan(2000);
    } finally {
      await server!.restart();
    }
    const after = await within(Promise.all(keys.map((key) => provider.tryAcquire(key))), 5000, 'tryAcquire after the restart');
    expect(after.map((lock, i) => lock!.token > locks[i]!.token)).toEqual([true, true]);
    await Promise.all(after.map((lock) => lock!.release()));
  });

  test('a waiter keeps waiting through the crash and is woken by the release after it (the LISTEN connection comes back)', async () => {
    const key = newKey();
    const holder = open();
    // A poll interval far above the bound below: only a NOTIFY can wake the waiter in time.
    const name = `waiter-${process.pid}-${count}`;
    const waiter = open({ pollIntervalMs: 30_000 }, name);
    const lock = await holder.tryAcquire(key, { ttlMs: 20_000 });
    const waiting = waiter.acquire(key, { waitMs: 40_000 });
    waiting.catch(() => undefined);
    const listening = async (): Promise<boolean> => (await connectionsOf(server!.url, name)).listening === 1;
    await until(listening, 5000, 'the waiter listening before the crash', { everyMs: 100 });
    await server!.kill();
    await server!.restart();
    // Its LISTEN connection died with the server; it opens a new one within about a second.
    await until(listening, 5000, 'the waiter listening again after the restart', { everyMs: 100 });
    await within(lock!.release(), 5000, 'release after the restart');
    const releasedAt = Date.now();
    const second = await within(waiting, 5000, 'the waiter to be granted');
    expect(Date.now() - releasedAt).toBeLessThan(1000);
    expect(second.token).toBeGreaterThan(lock!.token);
    await second.release();
  });
});
