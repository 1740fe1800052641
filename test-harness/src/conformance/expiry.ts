import { ErrorCode, type Lock, type LockProvider } from '@holdfast/core';
import { expect, test } from 'vitest';
import { abortedWithin, abortTime, codeOf, rejection } from '../helpers/index.js';
import { expectsExpiry, expectsInspectExpiry } from './expectations.js';
import type { CaseFactory } from './suite-types.js';
import type { CaseContext } from './support.js';
import { delay } from './support.js';

/** How many TTLs the long hold lasts (at least; longer where the backend's grace needs it). */
const LONG_HOLD_TTLS = 3;

/** Cases that wait for TTLs to pass; independent of each other, so they run concurrently. */
export function expiryCases(cases: CaseFactory): void {
  test.concurrent('13. a holder that stops renewing loses the lock after its TTL; another then takes it', async (t) => {
    const c = cases(t);
    const { b, key, ttlMs, lock, sentAt } = await c.unrenewedLock();
    const taken = await takeOver(c, b, key, ttlMs, 'a lapsed lock is taken by a waiter');
    expect(performance.now() - sentAt, 'a waiter was not woken promptly when the lease lapsed').toBeLessThan(
      ttlMs + c.timing.graceMs + c.timing.promptWakeMs,
    );
    expect(taken.token, "the new holder's token is not above the lapsed one").toBeGreaterThan(lock.token);
    const reason = await abortedWithin(lock.signal, c.timing.slackMs, 'a lapsed holder is told it lost the lock');
    expect(codeOf(reason), "a lapsed holder's signal reason").toBe(ErrorCode.Lost);
  });

  test.concurrent('14. the lock is not lost before its TTL (checked near the end of the lease)', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const ttlMs = Math.max(c.timing.shortTtlMs, 2 * c.timing.slackMs);
    const roundTrip = await c.roundTripMs(b, key);
    const sentAt = performance.now();
    const lock = await c.within('tryAcquire answers', a.tryAcquire(key, { ttlMs, autoRenew: false }));
    expect(lock).not.toBeNull();
    // Inherent wait: the point is what holds at 75-90 % of the lease (core gives up at 90 %).
    await delay(sentAt + ttlMs * 0.75 - 3 * roundTrip - performance.now());
    expect(await c.within('tryAcquire answers', b.tryAcquire(key)), 'the lock was free before 75 % of its TTL').toBeNull();
    expect(await c.within('isHeld answers', lock!.isHeld()), 'the holder lost the lock before 75 % of its TTL').toBe(true);
    expect(lock!.signal.aborted, 'the holder was told it lost the lock before 75 % of its TTL').toBe(false);
    expect(performance.now() - sentAt, 'the checks ran too late to say anything').toBeLessThan(ttlMs * 0.9);
  });

  test.concurrent('15/43. auto-renewal keeps a lock through a long hold against a contender, its signal quiet; renewal stops on release', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const ttlMs = c.timing.shortTtlMs;
    const lock = await c.within('tryAcquire answers', a.tryAcquire(key, { ttlMs }));
    expect(lock).not.toBeNull();
    const quietSince = performance.now();
    const holdMs = Math.max(LONG_HOLD_TTLS * ttlMs, ttlMs + c.timing.graceMs + c.timing.slackMs);
    const everyMs = Math.max(ttlMs / 6, 20);
    let attempts = 0;
    while (performance.now() - quietSince < holdMs) {
      const tried = await c.within("the contender's tryAcquire answers", b.tryAcquire(key));
      attempts++;
      const at = Math.round(performance.now() - quietSince);
      expect(tried, `a contender got an auto-renewed lock ${at} ms into the hold (TTL ${ttlMs} ms)`).toBeNull();
      expect(lock!.signal.aborted, `a correctly held lock's signal aborted ${at} ms into the hold`).toBe(false);
      // The contender's pace: it keeps trying all through the hold.
      await delay(everyMs);
    }
    expect(attempts, 'the contender tried too rarely to watch the whole hold').toBeGreaterThanOrEqual(LONG_HOLD_TTLS * 3);
    expect(await c.within('isHeld answers', lock!.isHeld()), 'an auto-renewed lock was not held at the end of a long hold').toBe(true);
    expect((await c.within('inspect answers', b.inspect(key)))?.token, 'inspect shows another holder after a long hold').toBe(lock!.token);
    await c.within('release answers', lock!.release());
    expect(codeOf(lock!.signal.reason), 'release after a long hold').toBe(ErrorCode.Released);
    expect(await c.within('tryAcquire answers', b.tryAcquire(key)), 'renewal kept the lock after release').not.toBeNull();
  });

  test.concurrent('16. extend() keeps the lock past the original TTL; chained extends work', async (t) => {
    const c = cases(t);
    const { b, key, ttlMs, lock } = await c.unrenewedLock(Math.max(c.timing.shortTtlMs, 2 * c.timing.slackMs));
    for (let i = 0; i < 5; i++) {
      // Inherent: each extend comes a third of a lease after the last (leaving a slow server most of
      // the lease to answer), so only the extends keep the lock.
      await delay(ttlMs / 3);
      await c.within(`extend #${i + 1} answers`, lock.extend());
    }
    // 1.67 TTLs have passed since the grant: only the extends can explain it still being held.
    expect(await c.within('tryAcquire answers', b.tryAcquire(key)), 'chained extends did not keep the lock').toBeNull();
    expect(await c.within('isHeld answers', lock.isHeld()), 'chained extends did not keep the lock').toBe(true);
    expect(lock.expiresAt?.getTime(), "after extends the handle's expiry is not in the future").toBeGreaterThan(Date.now());
  });

  test.concurrent('17. extend() on a released, expired or force-released lock fails with a typed error and does not prolong the new holder', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const [admin, third] = await c.providers2();
    const released = await c.within('tryAcquire answers', a.tryAcquire(c.key('released')));
    await c.within('release answers', released!.release());
    expect(codeOf(await c.within('extend answers', rejection(released!.extend()))), 'extend of a released lock').toBe(ErrorCode.NotHeld);

    const ttlMs = c.timing.shortTtlMs;
    const staleThenCheck = async (what: string, stale: Lock, key: string): Promise<void> => {
      const successor = await takeOver(c, b, key, ttlMs, `${what}: a successor takes the key`, { ttlMs, autoRenew: false });
      const grantedAt = performance.now();
      const error = await c.within(
        `${what}: extend of the stale handle answers`,
        rejection(stale.extend(60_000), `${what}: extend of the stale handle`),
      );
      expect(codeOf(error), `${what}: extend of a stale handle`).toBe(ErrorCode.Lost);
      expect(await c.within('isHeld answers', successor.isHeld()), `${what}: a stale extend took the lock from its new holder`).toBe(true);
      // The successor lets its lease lapse: a stale extend that prolonged it shows as a key that stays busy.
      await takeOver(c, third, key, ttlMs, `${what}: the successor's lease lapses on time despite a stale extend`);
      expect(performance.now() - grantedAt, `${what}: the successor's lease outlived its TTL`).toBeLessThan(
        ttlMs + c.timing.graceMs + 2 * c.timing.slackMs,
      );
    };
    const expiredKey = c.key('expired');
    const expired = await c.within('tryAcquire answers', a.tryAcquire(expiredKey, { ttlMs, autoRenew: false }));
    const forcedKey = c.key('forced');
    const forced = await c.within('tryAcquire answers', a.tryAcquire(forcedKey, { ttlMs: 60_000 }));
    expect(await c.within('forceRelease answers', admin.forceRelease(forcedKey))).toBe(true);
    await Promise.all([staleThenCheck('expired', expired!, expiredKey), staleThenCheck('force-released', forced!, forcedKey)]);
  });

  test.concurrent('18/19/24. a holder is told when its lock is deleted externally; release says released, not lost', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    // Long enough that a loaded machine does not make the renewal miss its deadline: only the forced
    // release may explain a loss here.
    const ttlMs = Math.max(c.timing.shortTtlMs, 2 * c.timing.slackMs);
    const lock = await c.within('tryAcquire answers', a.tryAcquire(key, { ttlMs }));
    expect(await c.within('forceRelease answers', b.forceRelease(key)), 'forceRelease of a held key').toBe(true);
    const reason = await abortedWithin(lock!.signal, ttlMs + c.timing.graceMs + c.timing.slackMs, 'a force-released holder is told');
    expect(codeOf(reason), "a force-released holder's signal reason").toBe(ErrorCode.Lost);
    expect(lock!.signal.aborted).toBe(true);
    expect(await c.within('isHeld answers', lock!.isHeld()), 'a force-released lock says it is held').toBe(false);
    expect(await c.within('forceRelease answers', b.forceRelease(key)), 'forceRelease of a free key').toBe(false);

    const normal = await c.within('tryAcquire answers', a.tryAcquire(c.key('normal')));
    await c.within('release answers', normal!.release());
    expect(normal!.signal.aborted, 'release did not abort the signal').toBe(true);
    expect(codeOf(normal!.signal.reason), "a released lock's signal reason").toBe(ErrorCode.Released);
  });

  test.concurrent('40. expiresAt moves forward after renewal and after extend, on the handle and in inspect', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const ttlMs = c.timing.shortTtlMs;
    const renewedKey = c.key('renewed');
    const renewed = await c.within('tryAcquire answers', a.tryAcquire(renewedKey, { ttlMs }));
    if (expectsExpiry(c, true)) {
      const first = renewed!.expiresAt;
      expect(first, 'an auto-renewed lock of a per-lock-expiry backend has no expiresAt').not.toBeNull();
      const firstInfo = (await c.within('inspect answers', b.inspect(renewedKey)))?.expiresAt;
      expect(firstInfo, 'inspect of a lock with a per-lock expiry reports none').toBeInstanceOf(Date);
      await c.until("the handle's expiresAt moves forward after a renewal", () => renewed!.expiresAt!.getTime() > first!.getTime(), ttlMs);
      const later = (await c.within('inspect answers', b.inspect(renewedKey)))?.expiresAt;
      expect(later?.getTime(), "inspect's expiresAt did not move forward after a renewal").toBeGreaterThan(firstInfo!.getTime());
    }
    const extendedKey = c.key('extended');
    const extended = await c.within('tryAcquire answers', a.tryAcquire(extendedKey, { ttlMs, autoRenew: false }));
    const before = extended!.expiresAt;
    expect(before, 'a lock that lapses unless extended has no expiresAt').toBeInstanceOf(Date);
    const infoBefore = (await c.within('inspect answers', b.inspect(extendedKey)))?.expiresAt ?? null;
    if (expectsInspectExpiry(c)) expect(infoBefore, 'inspect of a lapsing lock reports no expiresAt').toBeInstanceOf(Date);
    // Inherent: time must pass for a new expiry to be later than the first.
    await delay(Math.min(ttlMs / 10, 200));
    await c.within('extend answers', extended!.extend());
    expect(extended!.expiresAt?.getTime(), "the handle's expiresAt did not move forward after extend()").toBeGreaterThan(before!.getTime());
    const infoAfter = (await c.within('inspect answers', b.inspect(extendedKey)))?.expiresAt ?? null;
    if (infoBefore)
      expect(infoAfter?.getTime(), "inspect's expiresAt did not move forward after extend()").toBeGreaterThan(infoBefore.getTime());
  });

  test.concurrent('41. a lease that ran out and that nobody re-took is not reported as held', async (t) => {
    const c = cases(t);
    // sentAt is taken before the request, as the lease is timed: the holder gives up (and lets go)
    // at 0.9 x TTL counted from then.
    const { a, b, key, ttlMs, lock, sentAt } = await c.unrenewedLock();
    await c.until(
      'inspect stops reporting a lapsed lease',
      async () => (await b.inspect(key)) === null,
      ttlMs + c.timing.graceMs + c.timing.slackMs,
      20,
    );
    expect(performance.now() - sentAt, 'inspect reported the lease free before the holder could have given it up').toBeGreaterThanOrEqual(
      ttlMs * 0.9 - 1,
    );
    expect(await c.within('isHeld answers', lock.isHeld()), 'a lapsed lease says it is held').toBe(false);
    expect(codeOf(lock.signal.reason), 'a lapsed holder was not told it lost the lock').toBe(ErrorCode.Lost);
    expect(await c.within('inspect answers', a.inspect(key)), "the holder's own provider still reports a lapsed lease").toBeNull();
  });

  test.concurrent("42. the old holder's signal aborts no later than a successor can be granted", async (t) => {
    const c = cases(t);
    const { b, key, ttlMs, lock, sentAt } = await c.unrenewedLock();
    const abortedAt = abortTime(lock.signal);
    const successor = await takeOver(c, b, key, ttlMs, 'a successor takes the lapsed key');
    const grantedAt = performance.now();
    expect(abortedAt(), "a successor was granted while the old holder's signal had not aborted").toBeDefined();
    expect(abortedAt()!, "the old holder's signal aborted after the successor was granted").toBeLessThanOrEqual(grantedAt);
    // The ordering above is the safety property; this bound only allows for a loaded event loop.
    expect(abortedAt()! - sentAt, "the old holder's signal aborted later than TTL + the backend's grace (+ slack)").toBeLessThanOrEqual(
      ttlMs + c.timing.graceMs + c.timing.slackMs,
    );
    expect(successor.token).toBeGreaterThan(lock.token);
  });

  test.concurrent('44. extend(ttlMs) takes effect: a longer TTL outlives the original lease, a shorter one ends it sooner', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const ttlMs = c.timing.shortTtlMs;
    const graceAndSlack = c.timing.graceMs + c.timing.slackMs;
    const longTtlMs = Math.min(2 * ttlMs + graceAndSlack + c.timing.slackMs, c.capabilities.maxTtlMs);

    const longer = async (): Promise<void> => {
      const key = c.key('longer');
      const lock = await c.within('tryAcquire answers', a.tryAcquire(key, { ttlMs, autoRenew: false }));
      const extendedAt = Date.now();
      await c.within('extend(longer) answers', lock!.extend(longTtlMs));
      expect(lock!.expiresAt!.getTime(), "extend(ttlMs) did not move the handle's expiry to now + ttlMs").toBeGreaterThanOrEqual(
        extendedAt + longTtlMs - 5,
      );
      // Inherent: what matters is that the lock is still held after the original lease (and grace) ended.
      await delay(ttlMs + graceAndSlack);
      expect(
        await c.within('tryAcquire answers', b.tryAcquire(key)),
        'extend(ttlMs) with a longer TTL did not outlive the original lease',
      ).toBeNull();
      expect(await c.within('isHeld answers', lock!.isHeld()), 'extend(ttlMs) with a longer TTL: not held after the original lease').toBe(
        true,
      );
    };
    const shorter = async (): Promise<void> => {
      const key = c.key('shorter');
      const lock = await c.within('tryAcquire answers', a.tryAcquire(key, { ttlMs: longTtlMs, autoRenew: false }));
      const extendedAt = Date.now();
      await c.within('extend(shorter) answers', lock!.extend(ttlMs));
      expect(lock!.expiresAt!.getTime(), "extend(ttlMs) with a shorter TTL did not bring the handle's expiry forward").toBeLessThanOrEqual(
        Date.now() + ttlMs,
      );
      expect(lock!.expiresAt!.getTime()).toBeGreaterThanOrEqual(extendedAt + ttlMs - 5);
      const started = performance.now();
      await takeOver(c, b, key, ttlMs, 'extend(ttlMs) with a shorter TTL ends the lease sooner');
      expect(performance.now() - started, 'the lease ran to its original, longer TTL').toBeLessThan(longTtlMs);
    };
    await Promise.all([longer(), shorter()]);
  });
}

/**
 * `provider` waits for `key`, held by a lease of `ttlMs` that is left to lapse, and must get it within
 * the lease plus the backend's grace and slack.
 */
export async function takeOver(
  c: CaseContext,
  provider: LockProvider,
  key: string,
  ttlMs: number,
  what: string,
  options: { ttlMs?: number; autoRenew?: boolean } = { ttlMs: 60_000 },
): Promise<Lock> {
  const waitMs = ttlMs + c.timing.graceMs + c.timing.slackMs * 2;
  return c.within(what, provider.acquire(key, { ...options, waitMs }), waitMs + c.timing.slackMs);
}
