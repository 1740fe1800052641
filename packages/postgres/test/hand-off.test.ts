// Hand-off through LISTEN/NOTIFY: a waiter of another provider holds the lock within a few ms of the
// release, with a poll interval far too long to be what woke it.
import type { Lock } from '@holdfast/core';
import { within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe, expect, test } from 'vitest';
import { createPostgresProvider } from '../src/index.js';

const postgres = await useBackend('postgres');

describe.skipIf(!postgres.url)(`postgres hand-off (${postgres.label})`, { timeout: 60_000 }, () => {
  test('30 hand-offs between two providers: p50 under 20 ms, none near the 30 s poll interval', async () => {
    const [a, b] = [
      createPostgresProvider({ url: postgres.url!, pollIntervalMs: 30_000 }),
      createPostgresProvider({ url: postgres.url!, pollIntervalMs: 30_000 }),
    ];
    const key = `hand-off/${process.pid}/${Date.now()}`;
    const samples: number[] = [];
    try {
      let held: Lock = (await a.tryAcquire(key, { ttlMs: 30_000 }))!;
      let next = b;
      let other = a;
      // One untimed round first, so each provider's LISTEN connection is open.
      for (let round = 0; round <= 30; round++) {
        const waiting = next.acquire(key, { ttlMs: 30_000, waitMs: 10_000 });
        // The waiter's first attempt is busy and it is now waiting (its inspect round trip comes after).
        await next.inspect(key);
        const started = performance.now();
        await held.release();
        held = await within(waiting, 5000, 'the waiter granted after the release');
        if (round > 0) samples.push(performance.now() - started);
        [next, other] = [other, next];
      }
      await held.release();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    samples.sort((x, y) => x - y);
    const p50 = samples[Math.floor(samples.length / 2)]!;
    const max = samples.at(-1)!;
    console.info(`[postgres] hand-off over LISTEN/NOTIFY: p50 ${p50.toFixed(1)} ms, max ${max.toFixed(1)} ms (release call included)`);
    expect(p50).toBeLessThan(20);
    expect(max).toBeLessThan(1000);
  });
});
