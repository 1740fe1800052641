// createRedisProvider({ client }) with the app's own ioredis Cluster: locks, waits, wake-ups and
// listing work through it; Holdfast never closes it or changes its options; its subscriber is a
// duplicate of its own, closed with the provider.
import { within } from '@holdfast/test-harness/helpers';
import { Cluster } from 'ioredis';
import { describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { clusterOfTheFile } from './topology-servers.js';

const cluster = await clusterOfTheFile();

describe.skipIf(!cluster)("the app's own Redis Cluster client", { timeout: 30_000 }, () => {
  test('locks, waits, wakes and lists through it; after close() it is still ready and unchanged', async () => {
    const seeds = cluster!.ports.slice(0, 2).map((port) => ({ host: '127.0.0.1', port }));
    const app = new Cluster(seeds);
    const rivalsClient = new Cluster(seeds);
    try {
      await app.set('app-data', '1');
      const before = JSON.stringify(app.options);
      const locks = createRedisProvider({ client: app });
      const rivals = createRedisProvider({ client: rivalsClient });
      const keys = ['cluster-client/a', 'cluster-client/b', 'cluster-client/c', 'cluster-client/d'];
      const held = await Promise.all(keys.map((key) => locks.acquire(key, { waitMs: 2000 })));
      // Keys spread over the primaries: list() scans every one of them.
      const listed = (await rivals.list({ prefix: 'cluster-client/' })).map((info) => info.key);
      expect(listed).toEqual(keys);
      const waiting = rivals.acquire(keys[0]!, { waitMs: 5000 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const released = Date.now();
      await held[0]!.release();
      const next = await within(waiting, 1500, 'the waiter is granted at the release');
      expect(Date.now() - released, 'woken, not polled (pollIntervalMs is 2 s)').toBeLessThan(1000);
      expect(next.token).toBeGreaterThan(held[0]!.token);
      await next.release();
      await Promise.all(held.slice(1).map((lock) => lock.release()));
      await locks.close();
      await rivals.close();
      expect(app.status).toBe('ready');
      expect(JSON.stringify(app.options)).toBe(before);
      expect(await app.get('app-data')).toBe('1');
    } finally {
      app.disconnect();
      rivalsClient.disconnect();
    }
  });
});
