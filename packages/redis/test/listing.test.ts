import type { LockProvider } from '@holdfast/core';
import { type RedisSet, startRedisSet } from '@holdfast/test-harness/servers';
import { needLocalBinary, useBackend } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import { describe, expect, test } from 'vitest';
import { FOREIGN_OWNER } from '../src/index.js';
import { adminConnection, providersClosedAfterEach } from './fixture.js';
import { quorumUrl } from './quorum-url.js';

// list(prefix) on Redis: what SCAN finds under the namespace, read like inspect() reads one key.

const redis = await useBackend('redis');
const set: RedisSet | null = (await needLocalBinary('redis-server')) ? null : await startRedisSet(3);
const raw = adminConnection(redis.url, async () => set?.stop());

const tracked = providersClosedAfterEach();
const open = (url: string, prefix?: string): LockProvider => tracked.open(prefix === undefined ? { url } : { url, prefix });
const base = (): string => `listing/${process.pid}/${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
const keysOf = (infos: readonly { key: string }[]): string[] => infos.map((info) => info.key);

describe.skipIf(!redis.url)(`list() on one server (${redis.label})`, { timeout: 20_000 }, () => {
  test('the default namespace: companion keys and other data are not locks, a foreign holder is shown as one', async () => {
    const locks = open(redis.url!);
    const prefix = base();
    const held = await locks.tryAcquire(`${prefix}/held`, { reason: 'listed' });
    // A redlock holder with the same prefix as resource prefix, and data that is not a lock.
    await raw!.set(`holdfast:${prefix}/foreign`, 'a redlock value', 'PX', 30_000);
    await raw!.hset(`holdfast:${prefix}/a-hash`, 'field', 'value');
    await raw!.set(`${prefix}/outside-the-namespace`, 'app data');
    const listed = await locks.list({ prefix });
    expect(keysOf(listed)).toEqual([`${prefix}/foreign`, `${prefix}/held`]);
    expect(listed[0]!.owner).toBe(FOREIGN_OWNER);
    expect([listed[1]!.owner, listed[1]!.token, listed[1]!.reason]).toEqual([locks.owner, held!.token, 'listed']);
    await held!.release();
    expect(keysOf(await locks.list({ prefix }))).toEqual([`${prefix}/foreign`]);
    await raw!.del(`holdfast:${prefix}/foreign`, `holdfast:${prefix}/a-hash`, `${prefix}/outside-the-namespace`);
  });

  test("prefix '' (redlock interop): only locks Holdfast's holder record vouches for; the app's own keys are not locks", async () => {
    const locks = open(redis.url!, '');
    const prefix = base();
    const held = await locks.tryAcquire(`${prefix}/held`);
    await raw!.set(`${prefix}/app-string`, 'app data');
    await raw!.hset(`${prefix}/app-hash`, 'field', 'value');
    expect(keysOf(await locks.list({ prefix }))).toEqual([`${prefix}/held`]);
    expect(await locks.inspect(`${prefix}/app-string`), 'inspect() still reports any string key as held').not.toBeNull();
    await held!.release();
    await raw!.del(`${prefix}/app-string`, `${prefix}/app-hash`);
  });

  test('glob characters in keys and prefixes are literal', async () => {
    const locks = open(redis.url!);
    const prefix = base();
    const star = await locks.tryAcquire(`${prefix}/a*b`);
    const plain = await locks.tryAcquire(`${prefix}/axb`);
    const bracket = await locks.tryAcquire(`${prefix}/[x]\\y?`);
    expect(keysOf(await locks.list({ prefix: `${prefix}/a*` }))).toEqual([`${prefix}/a*b`]);
    expect(keysOf(await locks.list({ prefix: `${prefix}/[x]\\` }))).toEqual([`${prefix}/[x]\\y?`]);
    expect(keysOf(await locks.list({ prefix: `${prefix}/` }))).toEqual([`${prefix}/[x]\\y?`, `${prefix}/a*b`, `${prefix}/axb`]);
    await Promise.all([star!.release(), plain!.release(), bracket!.release()]);
  });
});

describe.skipIf(!set)('list() on a quorum of 3', { timeout: 20_000 }, () => {
  test('lists what a majority of nodes holds, not a key one node has', async () => {
    const locks = open(quorumUrl(set!.urls));
    const prefix = base();
    const held = await locks.tryAcquire(`${prefix}/held`);
    const node = new Redis(set!.urls[0]!);
    try {
      await node.set(`holdfast:${prefix}/on-one-node`, 'a minority value', 'PX', 30_000);
      expect(keysOf(await locks.list({ prefix }))).toEqual([`${prefix}/held`]);
      await node.del(`holdfast:${prefix}/held`);
      expect(keysOf(await locks.list({ prefix })), 'two of three nodes still hold it').toEqual([`${prefix}/held`]);
    } finally {
      node.disconnect();
    }
    await held!.release();
    expect(await locks.list({ prefix })).toEqual([]);
  });
});
