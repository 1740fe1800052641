// Semaphores on MySQL/MariaDB beyond the conformance cases: what only judging the newest version of
// one row settles (a lock against semaphores of two limits, renewals and releases racing grants),
// the row's shape over time (lapsed positions reused, an emptied row free at once), and forced
// releases told to holders in other providers within a poll interval.
import { ErrorCode, type Lock, type LockProvider } from '@holdfast/core';
import { codeOf, elapsed, lostWithin, settle, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import mysql from 'mysql2/promise';
import { afterAll, describe, expect, test } from 'vitest';
import { createMysqlProvider } from '../src/index.js';

const server = await useBackend('mysql');
const run = `${process.pid}-${Date.now()}`;
let count = 0;
const newKey = (what: string): string => `sem/${run}/${what}/${++count}`;
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!server.url)(`mysql semaphores (${server.label})`, { timeout: 60_000 }, () => {
  const url = server.url!;
  const providers = [1, 2, 3, 4].map(() => createMysqlProvider({ url }));
  const [a, b, c, d] = providers as [LockProvider, LockProvider, LockProvider, LockProvider];
  const db = mysql.createPool({ uri: url, connectionLimit: 1 });
  afterAll(() => Promise.allSettled([...providers.map((provider) => provider.close()), db.end()]));

  /** The key's row as stored: its slots array (every entry, lapsed ones too) and whether it is live. */
  const storedRow = async (key: string): Promise<{ slots: unknown[] | null; live: boolean } | undefined> => {
    const [rows] = await db.query(
      'SELECT CAST(slots AS CHAR) AS slots, expires_at > UTC_TIMESTAMP(3) AS live FROM holdfast_locks WHERE `key` = ?',
      [Buffer.from(key)],
    );
    const row = (rows as { slots: string | null; live: number }[])[0];
    return row && { slots: row.slots === null ? null : (JSON.parse(row.slots) as unknown[]), live: row.live === 1 };
  };

  test('a lock and semaphores of limits 3 and 2 raced on a free key, 30 rounds: one kind of holder at a time, never more slots than their limit, tokens distinct', async () => {
    const wins = new Map<string, number>();
    for (let round = 0; round < 30; round++) {
      const key = newKey('race');
      const attempts = providers.flatMap((provider) => [
        provider.tryAcquire(key),
        provider.semaphore(key, 3).tryAcquire(),
        provider.semaphore(key, 2).tryAcquire(),
      ]);
      const outcomes = await within(Promise.all(attempts.map(settle)), 10_000, `round ${round}: twelve attempts answer`);
      const conflicts = outcomes.filter((outcome) => outcome.error !== undefined);
      for (const { error } of conflicts) expect(codeOf(error), `round ${round}: an attempt failed otherwise`).toBe(ErrorCode.Conflict);
      const grants = outcomes.flatMap((outcome) => (outcome.value ? [outcome.value] : []));
      const lock = await a.inspect(key);
      const holders = await a.semaphore(key, 2).holders();
      const limits = new Set(holders.map((holder) => holder.details?.limit));
      expect(grants.length, `round ${round}: nothing granted on a free key`).toBeGreaterThan(0);
      expect(lock === null || holders.length === 0, `round ${round}: a lock and slots at once`).toBe(true);
      expect(limits.size, `round ${round}: slot holders with different limits`).toBeLessThanOrEqual(1);
      expect(holders.length, `round ${round}: more slots than the limit`).toBeLessThanOrEqual(Math.max(0, ...(limits as Set<number>)));
      expect(grants.length, `round ${round}: grants the table does not show`).toBe((lock ? 1 : 0) + holders.length);
      expect(new Set(grants.map((grant) => grant.token)).size, `round ${round}: two grants with one token`).toBe(grants.length);
      const winner = lock ? 'lock' : `limit ${[...limits][0]}`;
      wins.set(winner, (wins.get(winner) ?? 0) + 1);
      await Promise.all(grants.map((grant) => grant.release()));
    }
    console.info(`[mysql] lock vs semaphores on a free key, won by: ${[...wins].map(([kind, n]) => `${kind} ${n}`).join(', ')}`);
  });

  test('renewals and releases racing grants on one row for 3 s (limit 3, TTL 900 ms, 8 workers): no slot lost, the limit reached, never passed', async () => {
    const key = newKey('churn');
    let holding = 0;
    let most = 0;
    let grants = 0;
    const lost: unknown[] = [];
    const stopAt = Date.now() + 3000;
    const worker = async (provider: LockProvider): Promise<void> => {
      while (Date.now() < stopAt) {
        const slot = await provider.semaphore(key, 3).acquire({ ttlMs: 900, waitMs: 5000 });
        grants++;
        most = Math.max(most, ++holding);
        // Across a renewal or two (every 300 ms) while the others take and free slots of the same row.
        // (A 300 ms lease was lost by timing alone on a machine at load 12.)
        await pause(350 + Math.random() * 600);
        if (slot.signal.aborted) lost.push(slot.signal.reason);
        holding--;
        await slot.release();
      }
    };
    await within(Promise.all(providers.flatMap((provider) => [worker(provider), worker(provider)])), 20_000, 'eight workers finish');
    console.info(`[mysql] semaphore of 3 renewed every 300 ms: ${grants} grants in 3 s, at most ${most} holders`);
    expect(lost, 'slots lost while renewed').toEqual([]);
    expect(most, 'holders at once').toBe(3);
    expect(grants).toBeGreaterThan(6);
    expect(await a.semaphore(key, 3).holders()).toEqual([]);
  });

  test('lapsed slots free their positions: beside a kept slot, 15 holders that never renew leave at most `limit` entries; the emptied row is free at once for a lock or another limit', async () => {
    const key = newKey('positions');
    const kept = await a.semaphore(key, 2).tryAcquire();
    for (let i = 0; i < 15; i++) {
      // Each waits for the one before to lapse; the row stays live all along (the kept slot).
      const provider = providers[i % providers.length]!;
      const slot = await within(provider.semaphore(key, 2).acquire({ ttlMs: 100, autoRenew: false, waitMs: 3000 }), 4000, `slot ${i}`);
      expect(slot.token).toBeGreaterThan(kept!.token);
    }
    expect((await storedRow(key))?.slots?.length, 'entries in the slots array').toBe(2);
    await kept!.release();
    await pause(150);
    // The last lapsing slot is over and the kept one released: the row is lapsed, so a plain lock and a
    // semaphore of another limit need no wait.
    expect((await storedRow(key))?.live, 'a semaphore row with no live slot still looks held').toBe(false);
    const lock = await c.tryAcquire(key);
    expect(lock, 'a lock on the key of an emptied semaphore').not.toBeNull();
    await lock!.release();
    const other = await d.semaphore(key, 5).tryAcquire();
    expect(other, 'another limit on an emptied semaphore key').not.toBeNull();
    expect((await storedRow(key))?.slots?.length).toBe(1);
    await other!.release();
  });

  test('holders(): oldest grant first with the limit, lapsed slots left out; extends move one slot only; inspect() and list() show plain locks only', async () => {
    const key = newKey('holders');
    const lapsing = await a.semaphore(key, 3).tryAcquire({ ttlMs: 200, autoRenew: false, reason: 'short' });
    const kept = await b.semaphore(key, 3).tryAcquire({ reason: 'kept ✓' });
    const third = await c.semaphore(key, 3).tryAcquire({ reason: 'third' });
    expect((await d.semaphore(key, 3).holders()).map((h) => [h.reason, h.token, h.owner, h.details])).toEqual([
      ['short', lapsing!.token, a.owner, { limit: 3 }],
      ['kept ✓', kept!.token, b.owner, { limit: 3 }],
      ['third', third!.token, c.owner, { limit: 3 }],
    ]);
    await lostWithin(lapsing!, 2000);
    await kept!.extend(60_000);
    const [first, second, ...rest] = await within(
      (async () => {
        // The holder is told a little before the server's expiry (core's safety margin): wait for the server.
        for (;;) {
          const holders = await d.semaphore(key, 3).holders();
          if (holders.length < 3) return holders;
          await pause(20);
        }
      })(),
      2000,
      'the lapsed slot leaves holders()',
    );
    expect(rest).toEqual([]);
    expect([first!.token, second!.token]).toEqual([kept!.token, third!.token]);
    expect(first!.expiresAt!.getTime() - Date.now(), 'the extended slot').toBeGreaterThan(50_000);
    expect(second!.expiresAt!.getTime() - Date.now(), 'the slot not extended').toBeLessThan(31_000);
    expect(await d.inspect(key), 'inspect() of a semaphore key').toBeNull();
    expect(await d.list({ prefix: key }), 'list() of a semaphore key').toEqual([]);
    await Promise.all([kept!.release(), third!.release()]);
  });

  test('a forced release is told to every slot holder in other providers within a poll interval (TTL 30 s), not to a slot granted after it', async () => {
    const key = newKey('forced');
    const held: Lock[] = [];
    for (const provider of [a, b, c]) held.push((await provider.semaphore(key, 3).tryAcquire({ ttlMs: 30_000 }))!);
    const told = await elapsed(async () => {
      expect(await d.forceRelease(key)).toBe(true);
      const after = await d.semaphore(key, 3).tryAcquire({ ttlMs: 30_000 });
      await Promise.all(held.map((slot) => lostWithin(slot, 2000, 'a force-released slot holder is told')));
      return after!;
    });
    console.info(`[mysql] forced release told to three slot holders in ${told.ms.toFixed(0)} ms`);
    // pollIntervalMs is 250 ms: one look of each provider's watch, plus a few statements.
    expect(told.ms).toBeLessThan(1000);
    for (const slot of held) expect(codeOf(slot.signal.reason)).toBe(ErrorCode.Lost);
    await pause(400);
    expect(told.value.signal.aborted, 'a slot granted after the forced release was told it was lost').toBe(false);
    expect(await told.value.isHeld()).toBe(true);
    await told.value.release();
  });
});
