import { randomBytes } from 'node:crypto';
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { abortedWithin, until } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';

const consul = await useBackend('consul');

describe.skipIf(!consul.url)('nothing a released or lapsed lock leaves behind looks like a holder', () => {
  const http = consul.url?.replace('consul://', 'http://') ?? '';
  const providers: LockProvider[] = [];
  const provider = (prefix: string): LockProvider => {
    const created = createConsulProvider({ url: http, prefix, lockDelayMs: 1000 });
    providers.push(created);
    return created;
  };
  /** Raw KV: the keys under `prefix`, whatever their state. */
  const keysUnder = async (prefix: string): Promise<string[]> => {
    const response = await fetch(`${http}/v1/kv/${prefix}/?keys`, { signal: AbortSignal.timeout(2000) });
    return response.status === 404 ? [] : ((await response.json()) as string[]);
  };
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
  });

  test('an autoRenew: false lock that lapses takes its key with it', async () => {
    const prefix = `holdfast-lapse-${randomBytes(3).toString('hex')}`;
    const locks = provider(prefix);
    const lock = (await locks.tryAcquire('report', { ttlMs: 10_000, autoRenew: false }))!;
    expect(lock).not.toBeNull();
    expect(await keysUnder(prefix)).toEqual([`${prefix}/report`]);
    await abortedWithin(lock.signal, 13_000, 'the lapsing lock reported lost at its lease end');
    expect((lock.signal.reason as { code?: string }).code).toBe(ErrorCode.Lost);
    // Consul invalidates the session 2 x its 10 s TTL after creation, at the latest.
    const goneAfter = await until(async () => (await keysUnder(prefix)).length === 0, 15_000, 'the lapsed lock key deleted', {
      everyMs: 50,
    });
    console.info(`[consul leftovers] lapsed key gone ${Math.round(goneAfter)} ms after the lease end`);
    expect(await locks.inspect('report')).toBeNull();
    const next = await locks.acquire('report', { waitMs: 5000 });
    expect(next.token).toBeGreaterThan(lock.token);
    await next.release();
    expect(await keysUnder(prefix)).toEqual([]);
  }, 40_000);

  test('released locks, per-lock and shared, leave no key', async () => {
    const prefix = `holdfast-released-${randomBytes(3).toString('hex')}`;
    const locks = provider(prefix);
    const perLock = createConsulProvider({ url: http, prefix, lockDelayMs: 1000, sessionMode: 'per-lock' });
    providers.push(perLock);
    const held = [
      await locks.tryAcquire('a'),
      await perLock.tryAcquire('b'),
      await locks.tryAcquire('c', { autoRenew: false, ttlMs: 10_000 }),
    ];
    expect(await keysUnder(prefix)).toHaveLength(3);
    await Promise.all(held.map((lock) => lock!.release()));
    expect(await keysUnder(prefix)).toEqual([]);
  });
});
