import { ErrorCode, type LockProvider } from '@holdfast/core';
import { expect, test } from 'vitest';
import { codeOf, elapsed, rejection } from '../helpers/index.js';
import type { CaseFactory } from './suite-types.js';
import type { CaseContext } from './support.js';
import { delay, median, skipBecause } from './support.js';

/**
 * Time given to a just-started acquire to reach its wait. Inherent: nothing in the public API tells
 * that a waiter is parked, so the cases give it this long; they pass either way, only weaker.
 */
const SETTLE_MS = 150;

export function waitingCases(cases: CaseFactory): void {
  test('8. acquire with a wait limit times out within the limit; tryAcquire never waits', async (t) => {
    const c = cases(t);
    const { b, key } = await c.heldKey();
    const roundTrip = await c.roundTripMs(b, key);
    const waitMs = 400;
    const timedOut = await c.within(
      'acquire({ waitMs: 400 }) gives up',
      elapsed(() => rejection(b.acquire(key, { waitMs }))),
    );
    expect(codeOf(timedOut.value), 'a wait that ran out is not a LockTimeoutError').toBe(ErrorCode.Timeout);
    expect(timedOut.ms, 'acquire gave up before its wait limit').toBeGreaterThanOrEqual(waitMs - 5);
    expect(timedOut.ms, 'acquire waited well past its wait limit').toBeLessThan(waitMs + c.timing.slackMs);
    const tried = await c.within(
      'tryAcquire of a busy key answers',
      elapsed(() => b.tryAcquire(key)),
    );
    expect(tried.value, 'a busy key was granted').toBeNull();
    expect(tried.ms, `tryAcquire of a busy key waited (round trip ${roundTrip.toFixed(1)} ms)`).toBeLessThan(
      c.promptBoundMs(roundTrip) + c.timing.slackMs / 2,
    );
  });

  test('37. acquire with waitMs: 0 makes one attempt: a free key is granted, a busy key times out at once', async (t) => {
    const c = cases(t);
    const { b, key } = await c.heldKey();
    const granted = await c.within('acquire({ waitMs: 0 }) of a free key answers', b.acquire(c.key('free'), { waitMs: 0 }));
    expect(granted.token, 'acquire({ waitMs: 0 }) of a free key returned no usable lock').toBeTypeOf('bigint');
    expect(await c.within('isHeld answers', granted.isHeld()), 'acquire({ waitMs: 0 }) of a free key did not take it').toBe(true);
    const roundTrip = await c.roundTripMs(b, key);
    const bound = c.promptBoundMs(roundTrip);
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const once = await c.within(
        'acquire({ waitMs: 0 }) of a busy key answers',
        elapsed(() => rejection(b.acquire(key, { waitMs: 0 }))),
      );
      expect(codeOf(once.value), 'acquire({ waitMs: 0 }) of a busy key is not a LockTimeoutError').toBe(ErrorCode.Timeout);
      times.push(once.ms);
    }
    expect(
      median(times),
      `acquire({ waitMs: 0 }) of a busy key waited (round trip ${roundTrip.toFixed(1)} ms, times ${times.map(Math.round).join(',')})`,
    ).toBeLessThan(bound);
  });

  test('38. tryAcquire of a busy key answers within a few round trips', async (t) => {
    const c = cases(t);
    const { a, b, key } = await c.heldKey();
    const roundTrip = await c.roundTripMs(b, key);
    await c.expectTriesAnswerAtOnce(
      'a busy key',
      [a, b, a, b, b].map((provider) => () => provider.tryAcquire(key)),
      roundTrip,
    );
  });

  test('9. a waiter acquires promptly once the holder releases', async (t) => {
    const c = cases(t);
    const { b, key, holder } = await c.heldKey();
    const woke = await wakeAfter(c, b, key, () => holder.release());
    expect(woke.lock.key).toBe(key);
    expect(woke.ms, 'a waiter was not woken promptly by a release').toBeLessThan(c.timing.promptWakeMs);
  });

  test('39. a waiter acquires promptly once an admin force-releases the key', async (t) => {
    const c = cases(t);
    const { b, key } = await c.heldKey();
    const admin = await c.provider();
    const woke = await wakeAfter(c, b, key, async () => {
      expect(await admin.forceRelease(key), 'forceRelease of a held key said it was free').toBe(true);
    });
    expect(woke.lock.owner).toBe(b.owner);
    expect(woke.ms, 'a waiter was not woken promptly by forceRelease').toBeLessThan(c.timing.promptWakeMs);
  });

  test('10. an AbortSignal cancels a waiting acquire; an aborted signal fails fast; nothing is left behind', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const holder = await c.within('tryAcquire answers', a.tryAcquire(key));
    expect(holder).not.toBeNull();
    const controller = new AbortController();
    const waiting = rejection(b.acquire(key, { signal: controller.signal }));
    await delay(SETTLE_MS);
    const abortedAt = performance.now();
    controller.abort(new Error('caller gave up'));
    const error = await c.within('an aborted acquire gives up', waiting, c.timing.slackMs);
    expect(codeOf(error), 'an aborted acquire did not fail with a LockAbortedError').toBe(ErrorCode.Aborted);
    expect(performance.now() - abortedAt, 'an aborted acquire took long to give up').toBeLessThan(c.timing.slackMs);
    const free = c.key('free');
    const already = await c.within(
      'acquire with an aborted signal answers',
      elapsed(() => rejection(b.acquire(free, { signal: AbortSignal.abort() }))),
    );
    expect(codeOf(already.value), 'acquire with an already-aborted signal').toBe(ErrorCode.Aborted);
    expect(already.ms, 'acquire with an already-aborted signal did not fail at once').toBeLessThan(100);
    await c.within('release answers', holder!.release());
    expect(await c.within('inspect answers', a.inspect(key)), 'a cancelled waiter left a lock behind').toBeNull();
    expect(await c.within('inspect answers', a.inspect(free)), 'an already-aborted acquire left a lock behind').toBeNull();
  });

  test('11. a waiter that timed out or was cancelled leaves no trace that delays others', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const third = await c.provider();
    const key = c.key();
    const holder = await c.within('tryAcquire answers', a.tryAcquire(key));
    const timedOut = await c.within('acquire({ waitMs: 200 }) gives up', rejection(b.acquire(key, { waitMs: 200 })));
    expect(codeOf(timedOut)).toBe(ErrorCode.Timeout);
    const controller = new AbortController();
    const cancelled = rejection(third.acquire(key, { signal: controller.signal }));
    await delay(SETTLE_MS);
    controller.abort();
    expect(codeOf(await c.within('a cancelled acquire gives up', cancelled))).toBe(ErrorCode.Aborted);
    await c.within('release answers', holder!.release());
    const next = await c.within('tryAcquire answers', third.tryAcquire(key));
    expect(next, 'a gone waiter kept the released key from others').not.toBeNull();
    expect((await c.within('inspect answers', a.inspect(key)))?.owner).toBe(third.owner);
  });

  test('65. an acquire without a wait limit, or with one past what a timer holds (2 ** 31 ms), waits until the key is freed, also beside a waiter of its own instance', async (t) => {
    const c = cases(t);
    for (const waitMs of [undefined, 2 ** 31]) {
      const { b, key, holder } = await c.heldKey();
      const gaveUp: unknown[] = [];
      const waiters = [0, 1].map(() =>
        b.acquire(key, { waitMs }).then(
          (lock) => lock.release(),
          (error: unknown) => {
            gaveUp.push(error);
          },
        ),
      );
      await delay(SETTLE_MS + 300);
      expect(gaveUp.map(codeOf), `acquire({ waitMs: ${waitMs} }) of a busy key gave up instead of waiting`).toEqual([]);
      await c.within('release answers', holder.release());
      await c.within('both waiters are served', Promise.all(waiters), 2 * c.timing.promptWakeMs + c.timing.slackMs);
      expect(gaveUp.map(codeOf), `acquire({ waitMs: ${waitMs} }) gave up instead of being served`).toEqual([]);
    }
  });

  test('12. waiters are served in request order where the provider claims FIFO, also waiters of one instance', async (t) => {
    const c = cases(t);
    if (!c.capabilities.fifo) return skipBecause(t, `${c.target.name} does not claim FIFO waiters`);
    const holderProvider = await c.provider();
    const shared = await c.provider();
    for (const [what, providerFor] of [
      ['waiters of different instances', () => c.provider()],
      ['waiters of one instance', async () => shared],
    ] as const) {
      const key = c.key();
      const holder = await c.within('tryAcquire answers', holderProvider.tryAcquire(key));
      expect(holder).not.toBeNull();
      const order: number[] = [];
      const waiters: Promise<void>[] = [];
      for (let i = 0; i < 4; i++) {
        const provider = await providerFor();
        waiters.push(
          provider.acquire(key, { waitMs: 30_000 }).then(async (lock) => {
            order.push(i);
            await lock.release();
          }),
        );
        await delay(SETTLE_MS);
      }
      await c.within('release answers', holder!.release());
      await c.within(`${what}: every waiter is served`, Promise.all(waiters), 4 * c.timing.promptWakeMs + c.timing.slackMs);
      expect(order, `${what} were not served in request order`).toEqual([0, 1, 2, 3]);
    }
  });
}

/** Parks `waiter` on the busy `key`, runs `free`, and times how long after it the waiter holds the key. */
async function wakeAfter(c: CaseContext, waiter: LockProvider, key: string, free: () => Promise<void>) {
  let acquiredAt = 0;
  const waiting = waiter.acquire(key, { waitMs: c.timing.promptWakeMs * 3 + 2000 }).then((lock) => {
    acquiredAt = performance.now();
    return lock;
  });
  await delay(SETTLE_MS + 300);
  const freedAt = performance.now();
  await c.within('freeing the key answers', free());
  const lock = await c.within('the waiter is granted the freed key', waiting, c.timing.promptWakeMs + c.timing.slackMs);
  return { lock, ms: acquiredAt - freedAt };
}
