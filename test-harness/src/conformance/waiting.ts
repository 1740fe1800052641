import { ErrorCode } from '@holdfast/core';
import { expect, test } from 'vitest';
import type { CaseFactory } from './suite-types.js';
import { delay, elapsed, rejection, skipBecause } from './support.js';

/** Time given to a just-started acquire to reach its wait; the cases pass either way, only weaker. */
const SETTLE_MS = 150;

export function waitingCases(cases: CaseFactory): void {
  test('8. acquire with a wait limit times out within the limit; tryAcquire never waits', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    expect(await a.tryAcquire(key, { ttlMs: 60_000 })).not.toBeNull();
    const waitMs = 400;
    const timedOut = await elapsed(() => rejection(b.acquire(key, { waitMs })));
    expect((timedOut.value as { code?: string }).code).toBe(ErrorCode.Timeout);
    expect(timedOut.ms).toBeGreaterThanOrEqual(waitMs - 5);
    expect(timedOut.ms).toBeLessThan(waitMs + c.timing.slackMs);
    const once = await elapsed(() => rejection(b.acquire(key, { waitMs: 0 })));
    expect((once.value as { code?: string }).code).toBe(ErrorCode.Timeout);
    const tried = await elapsed(() => b.tryAcquire(key));
    expect(tried.value).toBeNull();
    expect(tried.ms).toBeLessThan(c.timing.slackMs);
  });

  test('9. a waiter acquires promptly once the holder releases', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const holder = await a.tryAcquire(key, { ttlMs: 60_000 });
    expect(holder).not.toBeNull();
    let acquiredAt = 0;
    const waiter = b.acquire(key, { waitMs: c.timing.promptWakeMs * 3 + 2000 }).then((lock) => {
      acquiredAt = performance.now();
      return lock;
    });
    await delay(SETTLE_MS + 300);
    const releasedAt = performance.now();
    await holder!.release();
    const lock = await waiter;
    expect(lock.key).toBe(key);
    expect(acquiredAt - releasedAt).toBeLessThan(c.timing.promptWakeMs);
  });

  test('10. an AbortSignal cancels a waiting acquire; an aborted signal fails fast; nothing is left behind', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const holder = await a.tryAcquire(key);
    const controller = new AbortController();
    const waiting = rejection(b.acquire(key, { signal: controller.signal }));
    await delay(SETTLE_MS);
    const abortedAt = performance.now();
    controller.abort(new Error('caller gave up'));
    const error = await waiting;
    expect((error as { code?: string }).code).toBe(ErrorCode.Aborted);
    expect(performance.now() - abortedAt).toBeLessThan(c.timing.slackMs);
    const already = await elapsed(() => rejection(b.acquire(c.key('free'), { signal: AbortSignal.abort() })));
    expect((already.value as { code?: string }).code).toBe(ErrorCode.Aborted);
    expect(already.ms).toBeLessThan(100);
    await holder!.release();
    expect(await a.inspect(key)).toBeNull();
    expect(await a.inspect(c.key('free'))).toBeNull();
  });

  test('11. a waiter that timed out or was cancelled leaves no trace that delays others', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const third = await c.provider();
    const key = c.key();
    const holder = await a.tryAcquire(key);
    expect((await rejection(b.acquire(key, { waitMs: 200 })) as { code?: string }).code).toBe(ErrorCode.Timeout);
    const controller = new AbortController();
    const cancelled = rejection(third.acquire(key, { signal: controller.signal }));
    await delay(SETTLE_MS);
    controller.abort();
    expect((await cancelled as { code?: string }).code).toBe(ErrorCode.Aborted);
    await holder!.release();
    const next = await third.tryAcquire(key);
    expect(next).not.toBeNull();
    expect((await a.inspect(key))?.owner).toBe(third.owner);
  });

  test('12. waiters are served in request order where the provider claims FIFO', async (t) => {
    const c = cases(t);
    if (!c.capabilities.fifo) return skipBecause(t, `${c.target.name} does not claim FIFO waiters`);
    const holderProvider = await c.provider();
    const key = c.key();
    const holder = await holderProvider.tryAcquire(key);
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 4; i++) {
      const provider = await c.provider();
      waiters.push(
        provider.acquire(key, { waitMs: 30_000 }).then(async (lock) => {
          order.push(i);
          await lock.release();
        }),
      );
      await delay(SETTLE_MS);
    }
    await holder!.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3]);
  });
}
