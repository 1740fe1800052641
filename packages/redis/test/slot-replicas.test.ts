import { ErrorCode, type LockProvider } from '@holdfast/core';
import { codeOf, rejection, until, within } from '@holdfast/test-harness/helpers';
import { afterEach, describe, expect, test } from 'vitest';
import { createRedisProvider, type RedisProviderOptions } from '../src/index.js';
import { serverWithAdmin } from './fixture.js';
import { sentinelOfTheFile } from './topology-servers.js';

// The `replicas` option (WAIT) for semaphore slots and read-write grants, as for locks: a grant counts
// only once that many replicas acknowledged it, and one that could not be confirmed is given back.

const { server } = await serverWithAdmin();
const sentinel = await sentinelOfTheFile();

/** Generous for a loaded machine: every call here is one or two round trips plus a WAIT. */
const CALL_MS = 5000;

let keyCount = 0;
const newKey = (): string => `slot-replicas/${process.pid}/${Date.now()}-${++keyCount}`;
const providers: LockProvider[] = [];
const open = (options: RedisProviderOptions): LockProvider => {
  const provider = createRedisProvider(options);
  providers.push(provider);
  return provider;
};
afterEach(async () => {
  await Promise.allSettled(providers.splice(0).map((provider) => provider.close()));
});

describe.skipIf(!server)('semaphore slots with `replicas` on a server that has none', () => {
  test('a slot no replica acknowledged is refused with a BackendError and given back', async () => {
    const key = newKey();
    const locks = open({ url: server!.url, replicas: 1, replicaTimeoutMs: 100 });
    const error = await within(rejection(locks.semaphore(key, 2).tryAcquire(), 'a slot without its replica'), CALL_MS, 'tryAcquire');
    expect(codeOf(error), String(error)).toBe(ErrorCode.Backend);
    expect((error as Error).message).toMatch(/only 0 of 1 replica/);
    const observer = open({ url: server!.url }).semaphore(key, 2);
    await until(async () => (await observer.holders()).length === 0, CALL_MS, 'the unconfirmed slot is given back');
    expect(await within(observer.holders(), CALL_MS, 'holders()')).toEqual([]);
  });

  test('a read-write grant no replica acknowledged is refused with a BackendError and given back', async () => {
    const key = newKey();
    const locks = open({ url: server!.url, replicas: 1, replicaTimeoutMs: 100 });
    const error = await within(rejection(locks.readWrite(key).tryRead(), 'a reader without its replica'), CALL_MS, 'tryRead');
    expect(codeOf(error), String(error)).toBe(ErrorCode.Backend);
    expect((error as Error).message).toMatch(/only 0 of 1 replica/);
    const observer = open({ url: server!.url }).readWrite(key);
    await until(async () => (await observer.holders()).length === 0, CALL_MS, 'the unconfirmed reader is given back');
    expect(await within(observer.holders(), CALL_MS, 'holders()')).toEqual([]);
  });
});

describe.skipIf(!sentinel)('semaphore slots with `replicas: 1` on a primary with a replica', () => {
  test('a slot is granted, renewed and released once the replica acknowledged it', async () => {
    const key = newKey();
    const locks = open({ url: sentinel!.url, replicas: 1 });
    const semaphore = locks.semaphore(key, 2);
    const slot = await within(semaphore.tryAcquire(), CALL_MS, 'tryAcquire');
    expect(slot, 'a free slot was refused').not.toBeNull();
    const before = slot!.expiresAt!.getTime();
    await within(slot!.extend(60_000), CALL_MS, 'extend');
    expect(slot!.expiresAt!.getTime(), 'extend did not move the lease end').toBeGreaterThan(before);
    expect((await within(semaphore.holders(), CALL_MS, 'holders()')).map((holder) => holder.token)).toEqual([slot!.token]);
    expect(await within(slot!.release(), CALL_MS, 'release')).toBeUndefined();
    expect(await within(semaphore.holders(), CALL_MS, 'holders()')).toEqual([]);
  });
});
