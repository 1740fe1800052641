import { expect, test } from 'vitest';
import { expectsExpiry, expectsInspectExpiry } from './expectations.js';
import type { CaseFactory } from './suite-types.js';

/** Backends judge time on their own clock: allow a little skew from ours. */
const CLOCK_SKEW_MS = 2000;

export function inspectionCases(cases: CaseFactory): void {
  test('27. inspect reports holder, reason, acquisition time, expiry and token; nothing for a free key', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const ttlMs = 60_000;
    expect(await c.within('inspect answers', b.inspect(key)), 'inspect of a free key reports a holder').toBeNull();
    const before = Date.now();
    const lock = await c.within('tryAcquire answers', a.tryAcquire(key, { reason: 'nightly report: inspect me', ttlMs }));
    const after = Date.now();
    const info = await c.within('inspect answers', b.inspect(key));
    expect(info, 'inspect of a held key reports nothing').not.toBeNull();
    expect(info!.key).toBe(key);
    expect(info!.owner, 'inspect reports another owner').toBe(a.owner);
    expect(info!.reason, 'inspect reports another reason').toBe('nightly report: inspect me');
    expect(info!.token, 'inspect reports another token').toBe(lock!.token);
    expect(info!.acquiredAt, "inspect's acquiredAt").toBeInstanceOf(Date);
    expect(info!.acquiredAt.getTime(), "inspect's acquiredAt is before the grant").toBeGreaterThanOrEqual(before - CLOCK_SKEW_MS);
    expect(info!.acquiredAt.getTime(), "inspect's acquiredAt is after the grant").toBeLessThanOrEqual(after + CLOCK_SKEW_MS);
    if (expectsInspectExpiry(c)) {
      expect(info!.expiresAt, 'inspect reports no expiry for a backend with per-lock expiry').toBeInstanceOf(Date);
    }
    if (info!.expiresAt !== null) {
      expect(info!.expiresAt.getTime(), "inspect's expiresAt is not in the future").toBeGreaterThan(after);
      expect(info!.expiresAt.getTime(), "inspect's expiresAt is beyond the TTL").toBeLessThanOrEqual(after + ttlMs + CLOCK_SKEW_MS);
    }
    await c.within('release answers', lock!.release());
    expect(await c.within('inspect answers', b.inspect(key)), 'inspect of a released key reports a holder').toBeNull();
  });

  test('47. the lock handle tells the truth: key, owner, reason, acquisition time, bigint token, expiry', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    for (const autoRenew of [true, false]) {
      const key = c.key();
      const ttlMs = c.timing.shortTtlMs;
      const reason = `conformance 47, autoRenew ${autoRenew}`;
      const before = Date.now();
      const lock = await c.within('tryAcquire answers', locks.tryAcquire(key, { ttlMs, autoRenew, reason }));
      const after = Date.now();
      expect(lock, 'tryAcquire of a free key returned no lock').not.toBeNull();
      expect(lock!.key).toBe(key);
      expect(lock!.owner, "the handle's owner is not its provider").toBe(locks.owner);
      expect(lock!.reason, "the handle's reason").toBe(reason);
      expect(typeof lock!.token, "the handle's token is not a bigint").toBe('bigint');
      expect(lock!.acquiredAt, "the handle's acquiredAt").toBeInstanceOf(Date);
      expect(lock!.acquiredAt.getTime(), "the handle's acquiredAt is before the grant").toBeGreaterThanOrEqual(before - CLOCK_SKEW_MS);
      expect(lock!.acquiredAt.getTime(), "the handle's acquiredAt is after the grant").toBeLessThanOrEqual(after + CLOCK_SKEW_MS);
      if (expectsExpiry(c, autoRenew)) {
        expect(lock!.expiresAt, `a lock with a lease (autoRenew ${autoRenew}) has no expiresAt`).toBeInstanceOf(Date);
      }
      if (lock!.expiresAt !== null) {
        // The handle may think its lease ends sooner than it does, never later.
        expect(lock!.expiresAt.getTime(), "the handle's expiresAt is beyond the TTL").toBeLessThanOrEqual(after + ttlMs);
        expect(lock!.expiresAt.getTime(), "the handle's expiresAt is not about a TTL after the grant").toBeGreaterThanOrEqual(
          before + ttlMs - c.timing.slackMs,
        );
      }
      const info = await c.within('inspect answers', locks.inspect(key));
      expect(info?.reason, 'inspect and the handle disagree on the reason').toBe(lock!.reason);
      expect(info?.token, 'inspect and the handle disagree on the token').toBe(lock!.token);
      expect(
        Math.abs(info!.acquiredAt.getTime() - lock!.acquiredAt.getTime()),
        'inspect and the handle disagree on acquiredAt',
      ).toBeLessThanOrEqual(CLOCK_SKEW_MS);
      await c.within('release answers', lock!.release());
    }
  });
}
