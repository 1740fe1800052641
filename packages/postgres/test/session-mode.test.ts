// Session mode beyond the conformance suite: a lock lives exactly as long as its connection, so a
// killed process or an ended connection frees it (and tells its holder) at once, whatever the TTL;
// one connection per held lock; and a transaction-mode pooler is refused, not trusted.
import { ErrorCode } from '@holdfast/core';
import { codeOf, lostWithin, rejection, until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe, expect, test } from 'vitest';
import { createPostgresProvider } from '../src/index.js';
import { connectionsOf, named } from './activity.js';
import { holdInChild } from './holder-child.js';
import { sessionModeFixture } from './session-fixture.js';
import { startTransactionPooler } from './transaction-pooler.js';

const postgres = await useBackend('postgres');
const run = `${process.pid}-${Date.now()}`;
let count = 0;
const newKey = (): string => `session/${run}/${++count}`;

describe.skipIf(!postgres.url)(`postgres session mode (${postgres.label})`, { timeout: 60_000 }, () => {
  const url = postgres.url!;
  const { sessionUrl, open, closedAfterAll, admin, adminReady } = sessionModeFixture(url);

  test('a holder process killed with SIGKILL frees its lock at once (TTL 30 s): a waiter holds it within a second', async () => {
    const key = newKey();
    const holder = await holdInChild(sessionUrl, key);
    try {
      const waiter = open();
      const waiting = waiter.acquire(key, { waitMs: 20_000 });
      waiting.catch(() => undefined);
      expect(await waiter.tryAcquire(key)).toBeNull();
      await holder.kill();
      const killedAt = performance.now();
      const lock = await within(waiting, 5000, 'the waiter is granted');
      const ms = performance.now() - killedAt;
      console.info(`[postgres session] lock of a SIGKILLed holder (TTL 30 s) granted to a waiter ${ms.toFixed(1)} ms after its exit`);
      expect(ms).toBeLessThan(1000);
      expect(lock.token).toBeGreaterThan(holder.token);
      await lock.release();
    } finally {
      await holder.kill();
    }
  });

  test("a holder whose connection is ended is told at once (TTL 30 s); forceRelease ends the holder's session", async () => {
    await adminReady;
    const [a, b] = [open({ url: named(url, `ended-${run}`) }), open()];
    const ended = await a.tryAcquire(newKey(), { ttlMs: 30_000 });
    const { rows } = await admin.query<{ ended: boolean }>(
      `SELECT bool_or(pg_terminate_backend(pid)) AS ended FROM pg_stat_activity WHERE application_name = $1`,
      [`ended-${run}`],
    );
    expect(rows[0]!.ended).toBe(true);
    const reason = await lostWithin(ended!, 1000, 'the holder whose connection was ended is told');
    expect(codeOf(reason)).toBe(ErrorCode.Lost);

    const key = newKey();
    const forced = await a.tryAcquire(key, { ttlMs: 30_000 });
    expect(await b.forceRelease(key)).toBe(true);
    // pg_terminate_backend waited for the holder's process: the lock is free on return.
    const next = await b.tryAcquire(key);
    expect(next, 'the key was still held after forceRelease returned').not.toBeNull();
    await lostWithin(forced!, 1000, 'the force-released holder is told');
    expect(await b.forceRelease(newKey())).toBe(false);
    await next!.release();
  });

  test('one connection per held lock, given back on release and reused', async () => {
    const name = `per-lock-${run}`;
    const provider = open({ url: named(url, name) });
    const keys = Array.from({ length: 5 }, newKey);
    const held = await Promise.all(keys.map((key) => provider.tryAcquire(key)));
    expect(held.every((lock) => lock !== null)).toBe(true);
    // The provider's own pool for inspect/list may add one more.
    const whileHeld = (await connectionsOf(url, name)).total;
    expect(whileHeld).toBeGreaterThanOrEqual(5);
    expect(whileHeld).toBeLessThanOrEqual(6);
    await Promise.all(held.map((lock) => lock!.release()));
    const again = await Promise.all(keys.map((key) => provider.tryAcquire(key)));
    expect(again.every((lock) => lock !== null)).toBe(true);
    expect((await connectionsOf(url, name)).total, 'released connections were not reused').toBe(whileHeld);
    await Promise.all(again.map((lock) => lock!.release()));
  });

  test('through a transaction-mode pooler session mode refuses loudly and leaves no lock behind; lease mode works', async () => {
    const pooler = await startTransactionPooler(Number(new URL(url).port));
    try {
      const pooled = new URL(url);
      pooled.port = String(pooler.port);
      const key = newKey();
      const error = await rejection(within(open({ url: pooled.href }).tryAcquire(key), 5000, 'tryAcquire through the pooler'));
      expect(codeOf(error)).toBe(ErrorCode.Backend);
      expect((error as Error).message).toMatch(/different server processes.*PgBouncer/);
      // The refused grant's connections were cut: the lock is free for a direct client.
      const direct = open();
      await until(async () => (await direct.inspect(key)) === null, 2000, 'the refused lock is freed', { everyMs: 50 });
      const lock = await direct.tryAcquire(key);
      expect(lock).not.toBeNull();
      await lock!.release();

      const lease = closedAfterAll(createPostgresProvider({ url: pooled.href }));
      const leased = await within(lease.tryAcquire(key), 5000, 'lease mode through the pooler');
      expect(leased).not.toBeNull();
      expect(await lease.tryAcquire(key)).toBeNull();
      await leased!.release();
    } finally {
      await pooler.close();
    }
  });
});
