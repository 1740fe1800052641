import { ErrorCode, type Lock } from '@holdfast/core';
import { expect, test } from 'vitest';
import { abortedWithin, codeOf, lostWithin, rejection, timed } from '../helpers/index.js';
import { semaphoreOf } from './semaphores.js';
import type { CaseFactory } from './suite-types.js';
import { delay } from './support.js';

/** Time given to a just-started acquire to reach its wait (as in the waiting cases): nothing in the API tells. */
const SETTLE_MS = 150;
/** How long a signal that must stay quiet is watched: a loss wrongly learnt of (a push, a monitor) arrives within it. */
const QUIET_MS = 300;

const tokensOf = (holders: readonly { token: bigint }[]): bigint[] => holders.map((holder) => holder.token);

export function semaphoreSlotCases(cases: CaseFactory): void {
  test('71. waiting on a full semaphore honours waitMs and an AbortSignal, and tryAcquire never waits', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key('full');
    const semA = semaphoreOf(t, c, a, key, 2);
    if (!semA) return;
    const held = await c.within('tryAcquire answers', Promise.all([semA.tryAcquire(), semA.tryAcquire()]));
    expect(held.every(Boolean), 'a free slot was not granted').toBe(true);
    const semB = b.semaphore(key, 2);
    const roundTrip = await c.roundTripMs(b, c.key('round-trip'));
    await c.expectTriesAnswerAtOnce(
      'a full semaphore',
      Array.from({ length: 5 }, () => () => semB.tryAcquire()),
      roundTrip,
    );
    const waitMs = 400;
    const timedOut = await timed(
      semB.acquire({ waitMs }),
      waitMs + c.timing.callMs,
      'acquire({ waitMs: 400 }) of a full semaphore gives up',
    );
    expect(codeOf(timedOut.error), 'a wait for a slot that ran out is not a LockTimeoutError').toBe(ErrorCode.Timeout);
    expect(timedOut.ms, 'acquire of a full semaphore gave up before its wait limit').toBeGreaterThanOrEqual(waitMs - 5);
    expect(timedOut.ms, 'acquire of a full semaphore waited well past its wait limit').toBeLessThan(waitMs + c.timing.slackMs);
    const once = await timed(semB.acquire({ waitMs: 0 }), c.timing.callMs, 'acquire({ waitMs: 0 }) of a full semaphore answers');
    expect(codeOf(once.error), 'acquire({ waitMs: 0 }) of a full semaphore').toBe(ErrorCode.Timeout);
    expect(once.ms, 'acquire({ waitMs: 0 }) of a full semaphore waited').toBeLessThan(c.promptBoundMs(roundTrip) + c.timing.slackMs / 2);

    const controller = new AbortController();
    const waiting = timed(
      semB.acquire({ waitMs: 30_000, signal: controller.signal }),
      c.timing.callMs + SETTLE_MS,
      'an aborted slot wait gives up',
    );
    await delay(SETTLE_MS);
    const abortedAt = performance.now();
    controller.abort(new Error('caller gave up'));
    const aborted = await waiting;
    expect(codeOf(aborted.error), 'an aborted wait for a slot is not a LockAbortedError').toBe(ErrorCode.Aborted);
    expect(performance.now() - abortedAt, 'an aborted wait for a slot took long to give up').toBeLessThan(c.timing.slackMs);
    const already = await timed(semB.acquire({ signal: AbortSignal.abort() }), c.timing.callMs, 'acquire with an aborted signal answers');
    expect(codeOf(already.error), 'a slot acquire with an already-aborted signal').toBe(ErrorCode.Aborted);
    expect(already.ms, 'a slot acquire with an already-aborted signal did not fail at once').toBeLessThan(100);

    await c.within('release answers', held[0]!.release());
    const next = await c.within('tryAcquire answers', semB.tryAcquire());
    expect(next, 'a waiter that gave up kept the freed slot from others').not.toBeNull();
    expect(tokensOf(await c.within('holders() answers', semA.holders())), 'a waiter that gave up left a slot behind').toEqual([
      held[1]!.token,
      next!.token,
    ]);
    await c.within('release answers', Promise.all([held[1]!.release(), next!.release()]));
  });
}

/**
 * Cases of this area that wait for leases to run out or to be renewed: side by side with each other
 * (see index.ts), so that their waits overlap.
 */
export function semaphoreRenewalCases(cases: CaseFactory): void {
  test.concurrent('69. with several slots held, holders() lists them oldest first and renewal, extend and release act on exactly one slot', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key('several-slots');
    const ttlMs = c.timing.shortTtlMs;
    const semA = semaphoreOf(t, c, a, key, 3);
    if (!semA) return;
    const semB = b.semaphore(key, 3);
    // One after the other, so that the grant order is known: a, b, a.
    const slots: Lock[] = [];
    for (const semaphore of [semA, semB, semA]) {
      const slot = await c.within('tryAcquire answers', semaphore.tryAcquire({ ttlMs, reason: `slot ${slots.length + 1}` }));
      expect(slot, 'a free slot was not granted').not.toBeNull();
      slots.push(slot!);
    }
    const [first, second, third] = slots as [Lock, Lock, Lock];
    const holders = await c.within('holders() answers', semB.holders());
    // Not sorted here: the order is the documented one, oldest grant first.
    expect(
      holders.map((holder) => holder.owner),
      'holders() is not oldest grant first (owners)',
    ).toEqual([a.owner, b.owner, a.owner]);
    expect(tokensOf(holders), 'holders() is not oldest grant first (tokens)').toEqual(slots.map((slot) => slot.token));
    expect(
      holders.map((holder) => holder.reason),
      'holders() reports other reasons',
    ).toEqual(['slot 1', 'slot 2', 'slot 3']);

    // Inherent: auto-renewal can only be shown by letting several TTLs pass; the slots are checked all along.
    const holdMs = Math.max(3 * ttlMs, ttlMs + c.timing.graceMs + c.timing.slackMs);
    const started = performance.now();
    while (performance.now() - started < holdMs) {
      await delay(ttlMs / 3);
      const at = Math.round(performance.now() - started);
      expect(
        slots.filter((slot) => slot.signal.aborted).length,
        `an auto-renewed slot was lost ${at} ms into the hold (TTL ${ttlMs} ms)`,
      ).toBe(0);
    }
    expect(tokensOf(await c.within('holders() answers', semA.holders())), 'holders() after the slots were renewed past their TTL').toEqual(
      slots.map((slot) => slot.token),
    );
    expect(await c.within('tryAcquire answers', semB.tryAcquire()), 'a fourth holder got a slot of 3 renewed slots').toBeNull();

    // The slot in the middle: extending it must not move the others' leases, releasing it must free only it.
    const before = first.expiresAt?.getTime();
    const longMs = Math.min(60_000, c.capabilities.maxTtlMs);
    await c.within('extend of the second slot answers', second.extend(longMs));
    expect(second.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY, 'extend(ttlMs) of a slot did not move its expiry').toBeGreaterThan(
      Date.now() + longMs / 2,
    );
    const afterExtend = await c.within('holders() answers', semA.holders());
    if (afterExtend[1]?.expiresAt) {
      expect(afterExtend[1].expiresAt.getTime(), "extend of the second slot did not move that slot's expiry in holders()").toBeGreaterThan(
        Date.now() + longMs / 2,
      );
      expect(afterExtend[0]!.expiresAt!.getTime(), 'extend of the second slot moved the first slot instead').toBeLessThan(
        Date.now() + longMs / 2,
      );
    }
    if (before !== undefined)
      expect(first.expiresAt!.getTime(), "extend of one slot moved another's handle").toBeLessThan(Date.now() + longMs / 2);
    await c.within('release of the second slot answers', second.release());
    expect(codeOf(second.signal.reason), 'the released slot was not told it was released').toBe(ErrorCode.Released);
    await expect(abortedWithin(first.signal, QUIET_MS), "releasing the second slot aborted the first's signal").rejects.toThrow(
      /did not abort/,
    );
    expect([first.signal.aborted, third.signal.aborted], "releasing the second slot aborted another holder's signal").toEqual([
      false,
      false,
    ]);
    expect(
      await c.within('isHeld answers', Promise.all([first.isHeld(), third.isHeld()])),
      'releasing the second slot freed another',
    ).toEqual([true, true]);
    expect(tokensOf(await c.within('holders() answers', semB.holders())), 'holders() after the second slot was released').toEqual([
      first.token,
      third.token,
    ]);
    const fourth = await c.within('tryAcquire answers', semB.tryAcquire());
    expect(fourth, 'the released slot was not granted again').not.toBeNull();
    expect(tokensOf(await c.within('holders() answers', semA.holders())), 'holders() is not oldest grant first after a release').toEqual([
      first.token,
      third.token,
      fourth!.token,
    ]);
    await c.within('release answers', Promise.all([first.release(), third.release(), fourth!.release()]));
  });

  test.concurrent('70. forceRelease frees every slot of a semaphore and tells every holder; a stale slot handle cannot touch the new slot', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const admin = await c.provider();
    const key = c.key('forced-slots');
    // Long enough that no renewal misses its deadline on a loaded machine: only the forced release may explain a loss.
    const ttlMs = Math.max(c.timing.shortTtlMs, 2 * c.timing.slackMs);
    const semA = semaphoreOf(t, c, a, key, 3);
    if (!semA) return;
    const slots = [
      await c.within('tryAcquire answers', semA.tryAcquire({ ttlMs })),
      await c.within('tryAcquire answers', b.semaphore(key, 3).tryAcquire({ ttlMs })),
      await c.within('tryAcquire answers', semA.tryAcquire({ ttlMs })),
    ];
    expect(slots.every(Boolean), 'a free slot was not granted').toBe(true);
    expect(await c.within('forceRelease answers', admin.forceRelease(key)), 'forceRelease of a semaphore with holders').toBe(true);
    // At once, before the stale handles may even have heard of their loss: the same instance takes a slot again.
    const current = await c.within(
      'the same instance takes a slot again',
      semA.acquire({ ttlMs, waitMs: c.timing.graceMs + c.timing.slackMs }),
    );
    const told = slots.map((slot, i) => lostWithin(slot!, c.timing.callMs, `force-released slot holder ${i + 1} is told`));
    for (const reason of await Promise.all(told))
      expect(codeOf(reason), "a force-released slot holder's signal reason").toBe(ErrorCode.Lost);
    expect(
      tokensOf(await c.within('holders() answers', admin.semaphore(key, 3).holders())),
      'holders() after forceRelease and a new grant',
    ).toEqual([current.token]);

    const stale = slots[0]!;
    const extended = await c.within('extend of a stale slot answers', rejection(stale.extend(), 'extend of a stale slot handle'));
    expect([ErrorCode.Lost, ErrorCode.NotHeld], `extend of a stale slot handle: ${codeOf(extended)}`).toContain(codeOf(extended));
    await c.within('release of a stale slot answers', Promise.all([stale.release(), slots[2]!.release()]));
    await expect(
      abortedWithin(current.signal, QUIET_MS),
      'the new slot was told it is lost after the stale handles were released',
    ).rejects.toThrow(/did not abort/);
    expect(await c.within('isHeld answers', current.isHeld()), "a stale slot handle's release or extend took the new slot").toBe(true);
    expect(tokensOf(await c.within('holders() answers', b.semaphore(key, 3).holders())), 'holders() after stale releases').toEqual([
      current.token,
    ]);
    await c.within('release answers', current.release());
  });
}
