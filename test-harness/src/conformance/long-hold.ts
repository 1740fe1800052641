import { ErrorCode, type Lock, type LockProvider } from '@holdfast/core';
import { expect, test } from 'vitest';
import { abortTime, codeOf, settle } from '../helpers/index.js';
import type { CaseFactory } from './suite-types.js';
import { delay } from './support.js';

/** TTLs a long hold lasts at least: a renewal that slips once in a while, or a lease that only counts from the grant, shows within them. */
const LONG_HOLD_TTLS = 10;
/**
 * Wall time a long hold lasts at least: defects that only appear after a few seconds (a holder's
 * signal that aborts by itself, contenders that judge a holder by its grant time) show within it.
 */
const LONG_HOLD_MIN_MS = 3000;

/** The long hold: many TTLs and several seconds, while contenders keep trying. Concurrent with the other expiry cases. */
export function longHoldCases(cases: CaseFactory): void {
  test.concurrent('66. a long hold (10 TTLs and several seconds) with auto-renewal: contenders on two instances and a waiter never get the key, the holder stays quiet', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const third = await c.provider();
    const key = c.key('long-hold');
    const ttlMs = c.timing.shortTtlMs;
    const holdMs = Math.max(LONG_HOLD_TTLS * ttlMs, LONG_HOLD_MIN_MS, ttlMs + c.timing.graceMs + c.timing.slackMs);
    const lock = await c.within('tryAcquire answers', a.tryAcquire(key, { ttlMs }));
    expect(lock, 'a free key was refused').not.toBeNull();
    const firstExpiry = lock!.expiresAt?.getTime() ?? null;
    const lostAt = abortTime(lock!.signal);
    const started = performance.now();
    const grants: string[] = [];
    // A waiter that waits the whole hold: a backend that hands the key on after a while wakes it.
    const waiter = settle(b.acquire(key, { waitMs: holdMs - c.timing.slackMs }));
    // Twice a TTL each: every lease the holder renews is tried against, without starving the renewals of
    // the cases beside it on a backend whose busy answer is a write (FerretDB's observation records).
    const everyMs = Math.max(ttlMs / 2, 20);
    const contend = async (provider: LockProvider): Promise<number> => {
      let attempts = 0;
      while (performance.now() - started < holdMs) {
        const tried: Lock | null = await c.within("a contender's tryAcquire answers", provider.tryAcquire(key));
        attempts++;
        if (tried) {
          grants.push(`${provider.owner} at ${Math.round(performance.now() - started)} ms`);
          await c.within('release answers', tried.release());
        }
        // The contender's pace: it keeps trying all through the hold.
        await delay(everyMs);
      }
      return attempts;
    };
    const attempts = await c.within(
      'the contenders watch the whole hold',
      Promise.all([contend(b), contend(third)]),
      holdMs + c.timing.callMs,
    );
    const lostMs = lostAt() === undefined ? undefined : Math.round(lostAt()! - started);
    const told = lostMs === undefined ? 'the holder was never told' : `the holder was told it lost the lock at ${lostMs} ms`;
    expect(grants, `contenders got an auto-renewed lock during a hold of ${holdMs} ms (TTL ${ttlMs} ms; ${told})`).toEqual([]);
    expect(lostMs, `a correctly held lock's signal aborted during a hold of ${holdMs} ms (TTL ${ttlMs} ms)`).toBeUndefined();
    for (const count of attempts) {
      expect(count, 'a contender tried too rarely to watch the whole hold').toBeGreaterThanOrEqual(LONG_HOLD_TTLS);
    }
    const waited = await c.within('the waiter gives up at its wait limit', waiter, c.timing.slackMs + c.timing.callMs);
    if (waited.value) await c.within('release answers', waited.value.release());
    expect(codeOf(waited.error), `a waiter for a renewed lock did not time out${waited.value ? ': it was granted the key' : ''}`).toBe(
      ErrorCode.Timeout,
    );
    expect(await c.within('isHeld answers', lock!.isHeld()), 'an auto-renewed lock was not held at the end of a long hold').toBe(true);
    expect((await c.within('inspect answers', third.inspect(key)))?.token, 'inspect shows another holder after a long hold').toBe(
      lock!.token,
    );
    if (firstExpiry !== null) {
      expect(lock!.expiresAt!.getTime(), "the handle's expiry did not follow the renewals of a long hold").toBeGreaterThan(
        firstExpiry + holdMs - 2 * ttlMs,
      );
    }
    await c.within('release answers', lock!.release());
    expect(codeOf(lock!.signal.reason), 'release after a long hold').toBe(ErrorCode.Released);
  });
}
