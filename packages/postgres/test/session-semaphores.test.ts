// Semaphores in session mode, beyond the conformance suite: what only its design can break. Slot i
// of a key is an advisory lock of its own, held by a connection each; the limit is in no lock but in
// the fence row's records, judged under that row's lock, and a record counts only while its server
// process holds its slot (session-grant-statement.ts, session-records.ts).
import { ErrorCode, type Lock } from '@holdfast/core';
import { codeOf, lostWithin, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe, expect, test } from 'vitest';
import { named } from './activity.js';
import { holdInChild } from './holder-child.js';
import { outcome, sessionModeFixture } from './session-fixture.js';

const postgres = await useBackend('postgres');
const run = `${process.pid}-${Date.now()}`;
let count = 0;
const newKey = (): string => `session-sem/${run}/${++count}`;

describe.skipIf(!postgres.url)(`postgres session mode, semaphores (${postgres.label})`, { timeout: 60_000 }, () => {
  const url = postgres.url!;
  const { sessionUrl, open, endConnectionsOf } = sessionModeFixture(url);

  test('a SIGKILLed slot holder (TTL 30 s) frees its slot for a waiter: at once the oldest slot (the one it blocks on), another by its next try', async () => {
    const [parent, waiter] = [open(), open()];
    for (const childIsOldest of [true, false]) {
      const key = newKey();
      let mine: Lock | null = null;
      if (!childIsOldest) mine = await parent.semaphore(key, 2).tryAcquire({ ttlMs: 30_000 });
      const child = await holdInChild(sessionUrl, key, 'semaphore:2');
      try {
        if (childIsOldest) mine = await parent.semaphore(key, 2).tryAcquire({ ttlMs: 30_000 });
        expect(mine).not.toBeNull();
        const waiting = waiter.semaphore(key, 2).acquire({ waitMs: 20_000 });
        waiting.catch(() => undefined);
        expect(await waiter.semaphore(key, 2).tryAcquire()).toBeNull();
        await child.kill();
        const killedAt = performance.now();
        const slot = await within(waiting, 5000, 'the waiter is granted the freed slot');
        const ms = performance.now() - killedAt;
        const which = childIsOldest ? 'the oldest slot, which it waits on' : 'a newer slot, found at its next try';
        console.info(`[postgres session] a SIGKILLed holder of ${which}: granted to a waiter ${ms.toFixed(1)} ms after its exit`);
        // The waiter blocks on the oldest slot, and tries again at least every 500 ms.
        expect(ms).toBeLessThan(childIsOldest ? 1000 : 1500);
        expect(slot.token).toBeGreaterThan(child.token);
        expect((await waiter.semaphore(key, 2).holders()).map((h) => h.token)).toEqual(
          [mine!.token, slot.token].sort((a, b) => (a < b ? -1 : 1)),
        );
        await Promise.all([slot.release(), mine!.release()]);
      } finally {
        await child.kill();
      }
    }
  });

  test("a dead slot holder's record neither counts toward the limit nor shows among holders", async () => {
    const name = `sem-dead-${run}`;
    const [dying, b] = [open({ url: named(url, name) }), open()];
    const key = newKey();
    const slot = await dying.semaphore(key, 1).tryAcquire({ ttlMs: 30_000 });
    expect(slot).not.toBeNull();
    await endConnectionsOf(name);
    await lostWithin(slot!, 1000, 'the slot holder whose connection ended is told');
    expect(await b.semaphore(key, 1).holders()).toEqual([]);
    const next = await b.semaphore(key, 1).tryAcquire();
    expect(next, "a dead holder's record took the only slot").not.toBeNull();
    expect((await b.semaphore(key, 1).holders()).map((h) => h.token)).toEqual([next!.token]);
    await next!.release();
    expect(await outcome(b.tryAcquire(key)), "a dead holder's record kept the key a semaphore").toBe('granted');
  });

  test('first grants racing for a fresh key: limits 2 and 5, or a semaphore and a plain lock, never both granted, the loser told a conflict', async () => {
    const [a, b] = [open(), open()];
    for (let round = 0; round < 20; round++) {
      const key = newKey();
      const other = round % 2 === 0 ? b.semaphore(key, 5).tryAcquire() : b.tryAcquire(key);
      const settled = await Promise.allSettled([a.semaphore(key, 2).tryAcquire(), a.semaphore(key, 2).tryAcquire(), other]);
      const answers = settled.map((s) => (s.status === 'fulfilled' ? (s.value === null ? null : 'granted') : codeOf(s.reason)));
      await Promise.all(settled.map((s) => (s.status === 'fulfilled' ? s.value?.release() : undefined)));
      const twos = answers.slice(0, 2);
      // Either the limit-2 grants got in first (both: two slots), or the other use did (and they are conflicts).
      const expected = twos.includes('granted')
        ? ['granted', 'granted', ErrorCode.Conflict]
        : [ErrorCode.Conflict, ErrorCode.Conflict, 'granted'];
      expect(answers, `round ${round}`).toEqual(expected);
    }
  });
});
