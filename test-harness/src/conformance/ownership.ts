import { ErrorCode } from '@holdfast/core';
import { expect, test } from 'vitest';
import { abortedWithin, codeOf, rejection } from '../helpers/index.js';
import { takeOver } from './expiry.js';
import type { CaseFactory } from './suite-types.js';

/** How long a signal that must stay quiet is watched after a stale handle's release. */
const QUIET_MS = 300;

export function ownershipCases(cases: CaseFactory): void {
  test.concurrent('20. releasing a lock whose TTL passed and which someone else now holds is a no-op', async (t) => {
    const c = cases(t);
    const { a, b, key, ttlMs, lock: stale } = await c.unrenewedLock();
    const current = await takeOver(c, b, key, ttlMs, 'a successor takes the lapsed key');
    await c.within('release of the stale handle answers', stale.release());
    expect(await c.within('isHeld answers', current.isHeld()), "a stale release freed the new holder's lock").toBe(true);
    expect((await c.within('inspect answers', a.inspect(key)))?.owner, 'a stale release changed the holder').toBe(b.owner);
    expect(await c.within('tryAcquire answers', a.tryAcquire(key)), 'a stale release freed the key').toBeNull();
  });

  test('21/22. release is idempotent and never frees another holder; forced release is explicit', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const first = await c.within('tryAcquire answers', a.tryAcquire(key));
    await c.within('release answers', first!.release());
    await c.within('a second release answers', first!.release());
    const second = await c.within('tryAcquire answers', b.tryAcquire(key, { ttlMs: c.timing.shortTtlMs }));
    expect(second, 'a released key was refused').not.toBeNull();
    await c.within('a third release answers', first!.release());
    expect(await c.within('isHeld answers', second!.isHeld()), 'a repeated release freed another holder').toBe(true);
    expect(await c.within('tryAcquire answers', a.tryAcquire(key)), 'a repeated release freed the key').toBeNull();
    expect(await c.within('forceRelease answers', a.forceRelease(c.key('never-held'))), 'forceRelease of a never-held key').toBe(false);
    expect(await c.within('forceRelease answers', a.forceRelease(key)), 'forceRelease of a held key').toBe(true);
    await abortedWithin(second!.signal, c.timing.shortTtlMs + c.timing.graceMs + c.timing.slackMs, 'a force-released holder is told');
    const after = await c.within(
      'acquire after forceRelease answers',
      a.acquire(key, { waitMs: c.timing.graceMs + c.timing.slackMs }),
      c.timing.graceMs + 2 * c.timing.slackMs,
    );
    expect(after.owner).toBe(a.owner);
  });

  test.concurrent('45. a stale handle and the current holder of one instance: releasing or extending the stale one leaves the new grant alone', async (t) => {
    const c = cases(t);
    const [p, admin] = await c.providers2();
    const other = await c.provider();
    const key = c.key();
    // Long enough that no renewal misses its deadline on a loaded machine: only the stale handle may disturb the grant.
    const ttlMs = Math.max(c.timing.shortTtlMs, 2 * c.timing.slackMs);
    const stale = await c.within('tryAcquire answers', p.tryAcquire(key, { ttlMs }));
    expect(stale).not.toBeNull();
    expect(await c.within('forceRelease answers', admin.forceRelease(key))).toBe(true);
    // At once, before the stale handle may even have heard of its loss: the same instance takes the key again.
    const current = await c.within(
      'the same instance takes the force-released key again',
      p.acquire(key, { waitMs: c.timing.graceMs + c.timing.slackMs, ttlMs }),
      c.timing.graceMs + 2 * c.timing.slackMs,
    );
    expect(current.token, 'the new grant of the same instance reuses the stale token').not.toBe(stale!.token);
    expect(
      codeOf(await c.within('extend of the stale handle answers', rejection(stale!.extend(), 'extend of a stale handle'))),
      'extend of a stale handle',
    ).toBe(ErrorCode.Lost);
    await c.within('release of the stale handle answers', stale!.release());
    // Inherent: a signal that must stay quiet can only be watched for a while; a loss it wrongly
    // learns of (a monitor, a push) arrives within milliseconds.
    await expect(
      abortedWithin(current.signal, QUIET_MS),
      'the new grant was told it is lost after the stale handle was released',
    ).rejects.toThrow(/did not abort/);
    expect(
      await c.within('isHeld answers', current.isHeld()),
      "the stale handle's release or extend took the new grant of the same instance",
    ).toBe(true);
    const info = await c.within('inspect answers', other.inspect(key));
    expect(info?.token, 'after a stale release the key is not held by the new grant').toBe(current.token);
    expect(
      await c.within('tryAcquire answers', other.tryAcquire(key)),
      'a stale release of the same instance freed its new grant',
    ).toBeNull();
  });
}
