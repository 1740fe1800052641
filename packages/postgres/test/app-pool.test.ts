// The app's own pg.Pool: used one statement at a time, never held across awaits, left open on close();
// and one LISTEN connection per provider whatever the number of waiters.
import type { LockProvider } from '@holdfast/core';
import { until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { createPostgresProvider } from '../src/index.js';
import { connectionsOf, named } from './activity.js';

const postgres = await useBackend('postgres');
const run = `${process.pid}-${Date.now()}`;

describe.skipIf(!postgres.url)(`postgres with the app's pool (${postgres.label})`, { timeout: 30_000 }, () => {
  const url = postgres.url!;
  const pools: pg.Pool[] = [];
  const appPool = (name: string, max: number): pg.Pool => {
    const pool = new pg.Pool({ connectionString: named(url, name), max });
    // As pg asks of every app: idle connections the server ends (at the end of this file) report here.
    pool.on('error', () => undefined);
    pools.push(pool);
    return pool;
  };
  afterAll(() => Promise.all(pools.map((pool) => pool.end())));

  test('locks through a pool of one connection; no connection stays borrowed while a lock is held; close() leaves the pool open', async () => {
    const pool = appPool(`app-${run}`, 1);
    const [a, b] = [createPostgresProvider({ pool }), createPostgresProvider({ pool })];
    const key = `pool/${run}/one`;
    const lock = await a.tryAcquire(key);
    expect(lock).not.toBeNull();
    expect(pool.totalCount - pool.idleCount, 'connections borrowed while the lock is held').toBe(0);
    // With max: 1, the second provider only gets a connection because the first gave it back.
    expect(await within(b.tryAcquire(key), 5000, 'a busy answer through the same one-connection pool')).toBeNull();
    await lock!.release();
    const second = await b.tryAcquire(key);
    expect(second!.token).toBeGreaterThan(lock!.token);
    await second!.release();
    await Promise.all([a.close(), b.close()]);
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  test('twenty waiters of one provider share one LISTEN connection, which close() ends', async () => {
    const name = `listen-${run}`;
    const holder = createPostgresProvider({ url });
    const waiter = createPostgresProvider({ pool: appPool(name, 4) });
    const providers: LockProvider[] = [holder, waiter];
    try {
      const keys = Array.from({ length: 20 }, (_, i) => `pool/${run}/wait-${i}`);
      const locks = await Promise.all(keys.map((key) => holder.tryAcquire(key, { ttlMs: 20_000 })));
      const waits = keys.map((key) => waiter.acquire(key, { waitMs: 15_000 }));
      await until(async () => (await connectionsOf(url, name)).listening === 1, 5000, 'a LISTEN connection', { everyMs: 100 });
      expect((await connectionsOf(url, name)).listening).toBe(1);
      await Promise.all(locks.map((lock) => lock!.release()));
      const granted = await within(Promise.all(waits), 5000, 'every waiter granted after the releases');
      expect(granted.map((lock) => lock.key)).toEqual(keys);
      await Promise.all(granted.map((lock) => lock.release()));
      await waiter.close();
      await until(async () => (await connectionsOf(url, name)).listening === 0, 5000, 'the LISTEN connection gone after close()', {
        everyMs: 100,
      });
    } finally {
      await Promise.allSettled(providers.map((provider) => provider.close()));
    }
  });
});
