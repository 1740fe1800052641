import { ErrorCode } from '@holdfast/core';
import { expect, test } from 'vitest';
import type { CaseFactory } from './suite-types.js';
import { abortedWithin, delay, rejection } from './support.js';

/** Cases that wait for TTLs to pass; independent of each other, so they run concurrently. */
export function expiryCases(cases: CaseFactory): void {
  test.concurrent('13. a holder that stops renewing loses the lock after its TTL; another then takes it', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const ttlMs = c.timing.shortTtlMs;
    const lock = await a.tryAcquire(key, { ttlMs, autoRenew: false });
    expect(lock).not.toBeNull();
    const taken = await b.acquire(key, { waitMs: ttlMs + c.timing.graceMs + c.timing.slackMs * 2, ttlMs: 60_000 });
    expect(taken.token).toBeGreaterThan(lock!.token);
    const reason = await abortedWithin(lock!.signal, c.timing.slackMs);
    expect((reason as { code?: string }).code).toBe(ErrorCode.Lost);
  });

  test.concurrent('14. the lock is not lost before its TTL', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const ttlMs = Math.max(c.timing.shortTtlMs, 2 * c.timing.slackMs);
    const lock = await a.tryAcquire(key, { ttlMs, autoRenew: false });
    await delay(ttlMs / 2);
    expect(await b.tryAcquire(key)).toBeNull();
    expect(await lock!.isHeld()).toBe(true);
    expect(lock!.signal.aborted).toBe(false);
  });

  test.concurrent('15. auto-renewal keeps a lock well past its TTL and stops on release', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const ttlMs = c.timing.shortTtlMs;
    const lock = await a.tryAcquire(key, { ttlMs });
    await delay(ttlMs * 2.5 + c.timing.graceMs);
    expect(await b.tryAcquire(key)).toBeNull();
    expect(await lock!.isHeld()).toBe(true);
    expect(lock!.signal.aborted).toBe(false);
    await lock!.release();
    expect(await b.tryAcquire(key)).not.toBeNull();
  });

  test.concurrent('16. extend() keeps the lock past the original TTL; chained extends work', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const ttlMs = Math.max(c.timing.shortTtlMs, 2 * c.timing.slackMs);
    const lock = await a.tryAcquire(key, { ttlMs, autoRenew: false });
    for (let i = 0; i < 3; i++) {
      await delay(ttlMs / 2);
      await lock!.extend();
    }
    // 1.5 TTLs have passed since the grant: only the extends can explain it still being held.
    expect(await b.tryAcquire(key)).toBeNull();
    expect(await lock!.isHeld()).toBe(true);
    expect(lock!.expiresAt!.getTime()).toBeGreaterThan(Date.now());
  });

  test.concurrent('17. extend() on a released or expired lock fails with a typed error and does not prolong the new holder', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const released = await a.tryAcquire(c.key('released'));
    await released!.release();
    expect(((await rejection(released!.extend())) as { code?: string }).code).toBe(ErrorCode.NotHeld);

    const key = c.key('expired');
    const ttlMs = c.timing.shortTtlMs;
    const expired = await a.tryAcquire(key, { ttlMs, autoRenew: false });
    const successor = await b.acquire(key, { waitMs: ttlMs + c.timing.graceMs + c.timing.slackMs * 2, ttlMs: 60_000 });
    expect(((await rejection(expired!.extend(60_000))) as { code?: string }).code).toBe(ErrorCode.Lost);
    expect(await successor.isHeld()).toBe(true);
    expect((await b.inspect(key))?.owner).toBe(b.owner);
  });

  test.concurrent('18/19/24. a holder is told when its lock is deleted externally; release says released, not lost', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const ttlMs = c.timing.shortTtlMs;
    const lock = await a.tryAcquire(key, { ttlMs });
    expect(await b.forceRelease(key)).toBe(true);
    const reason = await abortedWithin(lock!.signal, ttlMs + c.timing.graceMs + c.timing.slackMs);
    expect((reason as { code?: string }).code).toBe(ErrorCode.Lost);
    expect(lock!.signal.aborted).toBe(true);
    expect(await lock!.isHeld()).toBe(false);
    expect(await b.forceRelease(key)).toBe(false);

    const normal = await a.tryAcquire(c.key('normal'));
    await normal!.release();
    expect(normal!.signal.aborted).toBe(true);
    expect((normal!.signal.reason as { code?: string }).code).toBe(ErrorCode.Released);
  });
}
