import { expect, test } from 'vitest';
import type { CaseFactory } from './suite-types.js';

export function inspectionCases(cases: CaseFactory): void {
  test('27. inspect reports holder, reason, acquisition time, expiry and token; nothing for a free key', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    expect(await b.inspect(key)).toBeNull();
    const before = Date.now();
    const lock = await a.tryAcquire(key, { reason: 'nightly report: inspect me', ttlMs: 60_000 });
    const after = Date.now();
    const info = await b.inspect(key);
    expect(info).not.toBeNull();
    expect(info!.key).toBe(key);
    expect(info!.owner).toBe(a.owner);
    expect(info!.reason).toBe('nightly report: inspect me');
    expect(info!.token).toBe(lock!.token);
    // Backends judge time on their own clock: allow a little skew from ours.
    expect(info!.acquiredAt.getTime()).toBeGreaterThanOrEqual(before - 2000);
    expect(info!.acquiredAt.getTime()).toBeLessThanOrEqual(after + 2000);
    if (info!.expiresAt) expect(info!.expiresAt.getTime()).toBeGreaterThan(after);
    await lock!.release();
    expect(await b.inspect(key)).toBeNull();
  });
}
