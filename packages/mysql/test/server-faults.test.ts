// A MariaDB server of our own, crashed (SIGKILL) and restarted on the same port and data dir, and
// paused (SIGSTOP) while locks are held and waited for.
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { abortedWithin, codeOf, elapsed, rejection, within } from '@holdfast/test-harness/helpers';
import { type LocalDatabase, startMariadb } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { createMysqlProvider, type MysqlProviderOptions } from '../src/index.js';

const missing = await needLocalBinary('mariadbd');
const server: LocalDatabase | null = missing ? null : await startMariadb();
afterAll(() => server?.stop(), 60_000);

let count = 0;
const newKey = (): string => `server/${process.pid}/${++count}`;
const providers: LockProvider[] = [];
const open = (options: Omit<MysqlProviderOptions, 'url'> = {}): LockProvider => {
  const provider = createMysqlProvider({ url: server!.url, callTimeoutMs: 1000, closeTimeoutMs: 1000, ...options });
  providers.push(provider);
  return provider;
};
afterEach(async () => {
  server?.resume();
  await Promise.allSettled(providers.splice(0).map((provider) => provider.close()));
});

describe.skipIf(!server)('mysql server crash, restart and pause', { timeout: 60_000 }, () => {
  test('the lock row survives a crash: the holder keeps it, outage calls fail as BackendError (never busy), tokens keep rising', async () => {
    const [a, b] = [open(), open()];
    const key = newKey();
    const lock = await a.tryAcquire(key, { ttlMs: 15_000 });
    expect(lock).not.toBeNull();
    await server!.kill();
    try {
      const failed = await elapsed(() => rejection(within(b.tryAcquire(key), 5000, 'tryAcquire while the server is down')));
      expect(codeOf(failed.value)).toBe(ErrorCode.Backend);
      expect(failed.ms).toBeLessThan(1500);
    } finally {
      await server!.restart();
    }
    expect(await within(b.tryAcquire(key), 5000, 'tryAcquire after the restart')).toBeNull();
    expect(await within(lock!.isHeld(), 5000, 'isHeld after the restart')).toBe(true);
    expect(lock!.signal.aborted).toBe(false);
    await lock!.release();
    const next = await within(b.tryAcquire(key), 5000, 'tryAcquire after the release');
    expect(next!.token).toBeGreaterThan(lock!.token);
    await next!.release();
  });

  test('a waiter keeps waiting through the crash and is granted soon after the release that follows the restart', async () => {
    const [holder, waiter] = [open(), open()];
    const key = newKey();
    const lock = await holder.tryAcquire(key, { ttlMs: 20_000 });
    // The waiter has reached the server before the crash: one that never had would fail at once (waitForBackend).
    expect((await within(waiter.inspect(key), 5000, 'inspect'))?.token).toBe(lock!.token);
    const waiting = waiter.acquire(key, { waitMs: 40_000 });
    waiting.catch(() => undefined);
    await server!.kill();
    await server!.restart();
    await within(lock!.release(), 5000, 'release after the restart');
    const granted = await elapsed(() => within(waiting, 5000, 'the waiter to be granted'));
    // Failed looks during the outage back the waiter off to core's retry delay (at most 1 s).
    expect(granted.ms).toBeLessThan(1500);
    expect(granted.value.token).toBeGreaterThan(lock!.token);
    await granted.value.release();
  });

  test('a paused server: calls fail within callTimeoutMs, the holder is told it lost the lock before its lease ends, and all is well after SIGCONT', async () => {
    const [holder, other] = [open(), open()];
    const key = newKey();
    const ttlMs = 1500;
    const lock = await holder.tryAcquire(key, { ttlMs });
    server!.pause();
    const pausedAt = Date.now();
    try {
      const failed = await elapsed(() => rejection(within(other.tryAcquire(key), 5000, 'tryAcquire while the server is paused')));
      expect(codeOf(failed.value)).toBe(ErrorCode.Backend);
      expect(failed.ms).toBeLessThan(1000 + 500);
      await abortedWithin(lock!.signal, ttlMs + 500);
      expect(Date.now() - pausedAt, 'told after the lease could have ended on the server').toBeLessThan(ttlMs);
      expect(codeOf(lock!.signal.reason)).toBe(ErrorCode.Lost);
    } finally {
      server!.resume();
    }
    // The server judges the lease on its own clock: once it runs again the lapsed lock is free.
    const next = await within(other.acquire(key, { waitMs: 5000 }), 6000, 'acquire after SIGCONT');
    expect(next.token).toBeGreaterThan(lock!.token);
    await next.release();
  });
});
