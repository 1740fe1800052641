import { ErrorCode, type LockProvider } from '@holdfast/core';
import { codeOf, lostWithin, timed, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe, expect, test } from 'vitest';
import type { RedisProviderOptions } from '../src/index.js';
import { KeyNames } from '../src/key-names.js';
import { adminConnection, providersClosedAfterEach } from './fixture.js';

// Read-write locks on one Redis server (mode-scripts.ts): how the line of waiting places behaves when
// a waiter gives up, how a lapsed reader frees the key on the server's clock, and what the key looks
// like to list(), inspect() and a plain lock meanwhile.

const redis = await useBackend('redis');
const raw = adminConnection(redis.url);
const { open: openTracked } = providersClosedAfterEach();
const open = (options: Partial<RedisProviderOptions> = {}): LockProvider => openTracked({ url: redis.url!, ...options });
let keyCount = 0;
const newKey = (): string => `read-write/${process.pid}/${Date.now()}-${++keyCount}`;

describe.skipIf(!redis.url)(`read-write locks on one server (${redis.label})`, { timeout: 20_000 }, () => {
  test('a writer that gave up waiting leaves the line at once: readers behind it are not held back', async () => {
    const [a, b] = [open(), open()];
    const key = newKey();
    const reader = await a.readWrite(key).tryRead();
    expect(reader).not.toBeNull();
    const gaveUp = await timed(b.readWrite(key).write({ waitMs: 300 }).catch(codeOf), 3000, 'the writer gives up');
    expect(gaveUp.value).toBe(ErrorCode.Timeout);
    // Its place would hold readers back for the rest of its life (half the TTL, at most 2 s) if leaveQueue did not remove it.
    const next = await within(
      (async () => {
        for (;;) {
          const lock = await a.readWrite(key).tryRead();
          if (lock) return lock;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })(),
      1500,
      'a reader after the writer gave up',
    );
    expect(await raw!.exists(new KeyNames('holdfast:', 0).of(key).rwLine), 'the line outlived its last place').toBe(0);
    await Promise.all([reader!.release(), next.release()]);
  });

  test('a reader whose lease ran out frees the key for a writer at its TTL, and is told', async () => {
    const [a, b] = [open(), open()];
    const key = newKey();
    const reader = await a.readWrite(key).tryRead({ ttlMs: 300, autoRenew: false });
    expect(reader).not.toBeNull();
    const writer = await timed(b.readWrite(key).write({ waitMs: 3000 }), 3000, 'the writer is granted');
    expect(writer.ms, 'the writer got in before the reader lease ended').toBeGreaterThan(250);
    expect(writer.ms, 'the writer waited well past the reader lease').toBeLessThan(1500);
    expect(writer.value!.token > reader!.token).toBe(true);
    expect(codeOf(await lostWithin(reader!, 1000))).toBe(ErrorCode.Lost);
    await writer.value!.release();
    expect(await raw!.exists(`holdfast:${key}`), 'the hash outlived its last holder').toBe(0);
  });

  test('list() and inspect() do not show a read-write key as a lock; a plain lock of it waits; a semaphore is a conflict', async () => {
    const locks = open();
    const key = newKey();
    const reader = await locks.readWrite(key).tryRead({ reason: 'report' });
    expect(await locks.inspect(key)).toBeNull();
    expect((await locks.list({ prefix: key })).map((info) => info.key)).toEqual([]);
    expect(await locks.tryAcquire(key), 'a plain lock of a read-locked key').toBeNull();
    expect(
      codeOf(
        await locks
          .semaphore(key, 2)
          .tryAcquire()
          .catch((error: unknown) => error),
      ),
    ).toBe(ErrorCode.Conflict);
    const holders = await locks.readWrite(key).holders();
    expect(holders.map((holder) => [holder.owner, holder.reason, holder.details?.['mode']])).toEqual([[locks.owner, 'report', 'shared']]);
    await reader!.release();
    expect(await locks.readWrite(key).holders()).toEqual([]);
  });
});
