import { expect, test } from 'vitest';
import type { CaseFactory } from './suite-types.js';
import { abortedWithin } from './support.js';

export function ownershipCases(cases: CaseFactory): void {
  test.concurrent('20. releasing a lock whose TTL passed and which someone else now holds is a no-op', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const ttlMs = c.timing.shortTtlMs;
    const stale = await a.tryAcquire(key, { ttlMs, autoRenew: false });
    const current = await b.acquire(key, { waitMs: ttlMs + c.timing.graceMs + c.timing.slackMs * 2, ttlMs: 60_000 });
    await stale!.release();
    expect(await current.isHeld()).toBe(true);
    expect((await a.inspect(key))?.owner).toBe(b.owner);
    expect(await a.tryAcquire(key)).toBeNull();
  });

  test('21/22. release is idempotent and never frees another holder; forced release is explicit', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const first = await a.tryAcquire(key);
    await first!.release();
    await first!.release();
    const second = await b.tryAcquire(key, { ttlMs: c.timing.shortTtlMs });
    expect(second).not.toBeNull();
    await first!.release();
    expect(await second!.isHeld()).toBe(true);
    expect(await a.tryAcquire(key)).toBeNull();
    expect(await a.forceRelease(c.key('never-held'))).toBe(false);
    expect(await a.forceRelease(key)).toBe(true);
    await abortedWithin(second!.signal, c.timing.shortTtlMs + c.timing.graceMs + c.timing.slackMs);
    expect(await a.tryAcquire(key)).not.toBeNull();
  });
}
