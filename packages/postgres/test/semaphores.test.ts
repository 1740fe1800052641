// Semaphores on PostgreSQL beyond the conformance cases: races that only one row per key can settle
// (a lock against a semaphore, one limit against another), renewals racing grants on the same row,
// forced releases told at once across providers, and the table's own shape.
import { ErrorCode, type Lock, type LockProvider } from '@holdfast/core';
import { codeOf, lostWithin, settle, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterAll, describe, expect, test } from 'vitest';
import { createPostgresProvider } from '../src/index.js';

const postgres = await useBackend('postgres');
const run = `${process.pid}-${Date.now()}`;
let count = 0;
const newKey = (what: string): string => `sem/${run}/${what}/${++count}`;

describe.skipIf(!postgres.url)(`postgres semaphores (${postgres.label})`, { timeout: 60_000 }, () => {
  const providers: LockProvider[] = [];
  const open = (): LockProvider => {
    const provider = createPostgresProvider({ url: postgres.url! });
    providers.push(provider);
    return provider;
  };
  const [a, b, c, d] = [open(), open(), open(), open()];
  afterAll(() => Promise.allSettled(providers.map((provider) => provider.close())));

  /** Every lock taken by the settled attempts; the rest must be busy (null) or a LockConflictError. */
  const grantsOf = (outcomes: readonly { value?: Lock | null; error?: unknown }[]): Lock[] => {
    for (const outcome of outcomes) if (outcome.error !== undefined) expect(codeOf(outcome.error)).toBe(ErrorCode.Conflict);
    return outcomes.flatMap((outcome) => (outcome.value ? [outcome.value] : []));
  };

  test('a lock and a semaphore of limit 3 raced on a free key, 30 rounds: never both, never more than 3 slots, all tokens distinct', async () => {
    const seen = { lock: 0, semaphore: 0 };
    for (let round = 0; round < 30; round++) {
      const key = newKey('lock-vs-semaphore');
      const attempts = [a, b, c, d].flatMap((provider) => [
        provider.tryAcquire(key),
        provider.semaphore(key, 3).tryAcquire(),
        provider.semaphore(key, 3).tryAcquire(),
      ]);
      const grants = grantsOf(await within(Promise.all(attempts.map(settle)), 10_000, 'twelve attempts answer'));
      const asLock = (await a.inspect(key)) === null ? 0 : 1;
      const holders = await a.semaphore(key, 3).holders();
      expect(grants.length, `round ${round}: nothing was granted on a free key`).toBeGreaterThan(0);
      expect(asLock === 0 || holders.length === 0, `round ${round}: held as a lock and as a semaphore at once`).toBe(true);
      expect(holders.length, `round ${round}: more slots than the limit`).toBeLessThanOrEqual(3);
      expect(grants.length, `round ${round}: grants the backend does not show`).toBe(asLock + holders.length);
      expect(new Set(grants.map((lock) => lock.token)).size).toBe(grants.length);
      seen[asLock ? 'lock' : 'semaphore']++;
      await Promise.all(grants.map((lock) => lock.release()));
    }
    console.info(`[postgres] lock vs semaphore races: ${seen.lock} won by the lock, ${seen.semaphore} by the semaphore`);
  });

  test('limits 2 and 5 raced on a free key, 30 rounds: the holders share one limit and never exceed it', async () => {
    for (let round = 0; round < 30; round++) {
      const key = newKey('two-limits');
      const attempts = [a, b, c, d].flatMap((provider) => [2, 5, 2, 5].map((limit) => provider.semaphore(key, limit).tryAcquire()));
      const grants = grantsOf(await within(Promise.all(attempts.map(settle)), 10_000, 'sixteen attempts answer'));
      const holders = await a.semaphore(key, 2).holders();
      const limits = new Set(holders.map((holder) => holder.details?.limit));
      expect(limits.size, `round ${round}: holders with different limits`).toBe(1);
      const [limit] = [...limits] as number[];
      expect(holders.length, `round ${round}: more holders than their limit ${limit}`).toBeLessThanOrEqual(limit!);
      expect(holders.length).toBe(grants.length);
      await Promise.all(grants.map((lock) => lock.release()));
    }
  });

  test('renewals racing grants and releases on one semaphore row lose and resurrect no slot: 32 renewed holders, 4 churning workers, 3 s', async () => {
    const key = newKey('renewals');
    const sem = (provider: LockProvider) => provider.semaphore(key, 40);
    // 32 holders renewed every 333 ms (one batched UPDATE per provider each time) ...
    const steady = (await Promise.all(
      [a, b, c, d].flatMap((provider) => Array.from({ length: 8 }, () => sem(provider).tryAcquire({ ttlMs: 1000 }))),
    ))!;
    expect(steady.every((slot) => slot !== null)).toBe(true);
    // ... while every provider takes and frees the remaining slots as fast as it can, on the same row.
    let churned = 0;
    const dropped: bigint[] = [];
    const stopAt = Date.now() + 3000;
    const churn = async (provider: LockProvider): Promise<void> => {
      while (Date.now() < stopAt) {
        const slot = await sem(provider).tryAcquire({ ttlMs: 1000 });
        if (!slot) continue;
        churned++;
        if (!(await slot.isHeld())) dropped.push(slot.token);
        await slot.release();
      }
    };
    await within(Promise.all([a, b, c, d].map(churn)), 20_000, 'four churning workers finish');
    console.info(`[postgres] ${churned} slot grants and releases raced the renewals of 32 holders`);
    expect(churned).toBeGreaterThan(50);
    expect(dropped, 'granted slots dropped by a concurrent write').toEqual([]);
    expect(
      steady.filter((slot) => slot!.signal.aborted).map((slot) => String(slot!.signal.reason)),
      'renewed holders lost',
    ).toEqual([]);
    const holders = await sem(a).holders();
    expect(
      holders.map((h) => h.token),
      'released slots still held, or renewed ones gone',
    ).toEqual(steady.map((slot) => slot!.token).sort((x, y) => (x < y ? -1 : 1)));
    await Promise.all(steady.map((slot) => slot!.release()));
  });

  test('a forced release is told at once to holders in other providers (TTL 30 s), not to a slot granted after it', async () => {
    const key = newKey('forced');
    const first = await a.semaphore(key, 2).tryAcquire({ ttlMs: 30_000 });
    const second = await b.semaphore(key, 2).tryAcquire({ ttlMs: 30_000 });
    const plainKey = newKey('forced-lock');
    const plain = await c.tryAcquire(plainKey, { ttlMs: 30_000 });
    const started = performance.now();
    expect(await d.forceRelease(key)).toBe(true);
    const after = await c.semaphore(key, 2).tryAcquire({ ttlMs: 30_000 });
    expect(await d.forceRelease(plainKey)).toBe(true);
    await Promise.all([lostWithin(first!, 2000), lostWithin(second!, 2000), lostWithin(plain!, 2000)]);
    console.info(`[postgres] forced release told to three holders in ${(performance.now() - started).toFixed(1)} ms`);
    expect(codeOf(first!.signal.reason)).toBe(ErrorCode.Lost);
    // The later grant is not among those freed: a notice carries the highest token it freed.
    expect(after!.token).toBeGreaterThan(second!.token);
    expect(await after!.isHeld()).toBe(true);
    expect(after!.signal.aborted).toBe(false);
    await after!.release();
  });

  test('holders() lists oldest grant first with the limit; a lapsed slot counts as free; extends of one slot in one batch keep one slot', async () => {
    const key = newKey('holders');
    const lapsing = await a.semaphore(key, 2).tryAcquire({ ttlMs: 200, autoRenew: false, reason: 'short' });
    const kept = await b.semaphore(key, 2).tryAcquire({ reason: 'kept' });
    expect((await c.semaphore(key, 2).holders()).map((h) => [h.reason, h.token, h.details])).toEqual([
      ['short', lapsing!.token, { limit: 2 }],
      ['kept', kept!.token, { limit: 2 }],
    ]);
    await lostWithin(lapsing!, 2000);
    // Its holder is told a little before the server's expiry (core's safety margin): wait for the server.
    const next = await within(c.semaphore(key, 2).acquire({ waitMs: 2000 }), 3000, 'the lapsed slot is free');
    await Promise.all([kept!.extend(20_000), kept!.extend(40_000), kept!.extend(30_000)]);
    const holders = await c.semaphore(key, 2).holders();
    expect(holders.map((h) => h.token)).toEqual([kept!.token, next!.token]);
    expect(holders[0]!.expiresAt!.getTime() - Date.now()).toBeGreaterThan(25_000);
    expect(await c.inspect(key), 'inspect() shows plain locks only').toBeNull();
    expect((await c.list({ prefix: key })).length).toBe(0);
    await Promise.all([kept!.release(), next!.release()]);
  });
});
