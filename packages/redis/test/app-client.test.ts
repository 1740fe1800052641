import { ErrorCode } from '@holdfast/core';
import { abortedWithin, codeOf, until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';

// createRedisProvider({ client }): the app's own ioredis client. Holdfast uses it as it is, never
// closes it or changes it; the connection it needs for wake-ups is a duplicate of its own.

const redis = await useBackend('redis');
let keyCount = 0;
const newKey = (): string => `app-client/${process.pid}/${Date.now()}-${++keyCount}`;
const admin = redis.url ? new Redis(redis.url) : undefined;
afterAll(() => admin?.disconnect());

function thrownBy(work: () => unknown): unknown {
  try {
    work();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** Connections the server has open under this client name. */
async function connectionsNamed(name: string): Promise<number> {
  const list = (await admin!.client('LIST')) as string;
  return list.split('\n').filter((line) => line.includes(` name=${name} `)).length;
}

describe.skipIf(!redis.url)(`the app's own client (${redis.label})`, { timeout: 20_000 }, () => {
  test('locks, waits and wakes through it; after close() it is still open, unchanged, and the duplicate is gone', async () => {
    const name = `app-${process.pid}-${++keyCount}`;
    const client = new Redis(`${redis.url}`, { connectionName: name, db: 3 });
    const other = new Redis(`${redis.url}`, { db: 3 });
    try {
      await client.ping();
      const before = { ...client.options };
      const listeners = ['error', 'ready', 'close'].map((event) => client.listenerCount(event));
      const locks = createRedisProvider({ client });
      const rivals = createRedisProvider({ client: other });
      const key = newKey();
      const lock = await locks.acquire(key, { waitMs: 2000, reason: 'app client' });
      // The app's db is the locks' db.
      expect(await admin!.select(3).then(() => admin!.exists(`holdfast:${key}`))).toBe(1);
      await admin!.select(0);
      expect((await rivals.inspect(key))?.owner).toBe(locks.owner);
      // A waiter in the other provider is woken by the release (its subscriber is a duplicate of `other`).
      const waiting = rivals.acquire(key, { waitMs: 5000 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const released = Date.now();
      await lock.release();
      const next = await within(waiting, 1500, 'the waiter is granted at the release');
      expect(Date.now() - released, 'woken, not polled (pollIntervalMs is 2 s)').toBeLessThan(1000);
      expect(next.token).toBeGreaterThan(lock.token);
      await next.release();
      // A waiter of `locks` needs a subscriber: a duplicate of the app's client, under its name.
      const held = await rivals.tryAcquire(key);
      const waiter = locks.acquire(key, { waitMs: 5000 });
      await until(async () => (await connectionsNamed(name)) === 2, 3000, 'the waiting provider opened its subscriber, a duplicate');
      await held!.release();
      await (await within(waiter, 2000, 'the waiter is granted at the release')).release();
      await locks.close();
      await rivals.close();
      expect(client.status, 'the app client is still connected').toBe('ready');
      expect(await client.ping()).toBe('PONG');
      expect(await client.set('app-data', 'still mine')).toBe('OK');
      expect(client.options).toEqual(before);
      expect(
        ['error', 'ready', 'close'].map((event) => client.listenerCount(event)),
        "Holdfast's listeners are gone",
      ).toEqual(listeners);
      expect(await connectionsNamed(name), 'only the app client itself: the duplicate was closed').toBe(1);
    } finally {
      client.disconnect();
      other.disconnect();
    }
  });

  test('a holder on the app client is told when its connection drops, and the app client reconnects on its own', async () => {
    const client = new Redis(`${redis.url}`);
    try {
      const locks = createRedisProvider({ client });
      const lock = await locks.tryAcquire(newKey(), { ttlMs: 30_000 });
      expect(lock).not.toBeNull();
      const id = await client.client('ID');
      await admin!.client('KILL', 'ID', String(id));
      // The signal may abort before KILL's reply arrives: a listener added then would wait in vain.
      await abortedWithin(lock!.signal, 3000, 'the holder is told');
      await within(new Promise((resolve) => client.once('ready', resolve)), 5000, 'the app client reconnects by itself');
      expect(await locks.tryAcquire(newKey())).not.toBeNull();
      await locks.close();
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
    }
  });

  test('anything but an ioredis client, or a client beside a url, is refused before anything connects', async () => {
    expect(codeOf(thrownBy(() => createRedisProvider({ client: {} as Redis })))).toBe(ErrorCode.InvalidArgument);
    const client = new Redis(`${redis.url}`, { lazyConnect: true });
    expect(codeOf(thrownBy(() => createRedisProvider({ client, url: redis.url! })))).toBe(ErrorCode.InvalidArgument);
    expect(client.status, 'the refused client was not touched').toBe('wait');
    client.disconnect();
  });
});
