import { ErrorCode, type Lock } from '@holdfast/core';
import { expect, test } from 'vitest';
import { codeOf, rejection } from '../helpers/index.js';
import { semaphoreOf } from './semaphores.js';
import type { CaseFactory } from './suite-types.js';
import { skipBecause } from './support.js';

/** Reads a signal's state at the moment a promise settles, not later: the order is what is checked. */
async function abortedWhenSettled(work: Promise<unknown>, signals: readonly AbortSignal[]): Promise<boolean[]> {
  await work;
  return signals.map((signal) => signal.aborted);
}

export function ownHolderCases(cases: CaseFactory): void {
  test('90. a backend that has never answered is reported at once by a waiting acquire (a BackendError, even without waitMs); waitForBackend: true retries it until waitMs', async (t) => {
    const c = cases(t);
    const create = c.target.createUnreachableProvider;
    if (!create) return skipBecause(t, `${c.target.name} provides no unreachable-backend fixture`);
    const unreachable = await c.within('createUnreachableProvider() answers', Promise.resolve(create.call(c.target)));
    const bound = c.timing.unreachableMs;
    try {
      // No waitMs: waits forever for a busy key, but must not wait forever for a wrong URL.
      const started = performance.now();
      const error = await c.within(
        'acquire without waitMs against a backend that never answered',
        rejection(unreachable.acquire(c.key())),
        bound + c.timing.slackMs,
      );
      expect(codeOf(error), 'acquire against a backend that never answered is not a BackendError').toBe(ErrorCode.Backend);
      expect(performance.now() - started, 'acquire against a backend that never answered took long to fail').toBeLessThan(bound);
      const waitMs = 600;
      const optedIn = performance.now();
      const waited = await c.within(
        'acquire with waitForBackend answers',
        rejection(unreachable.acquire(c.key(), { waitMs, waitForBackend: true })),
        waitMs + bound + c.timing.slackMs,
      );
      expect(codeOf(waited), 'a waitForBackend acquire that ran out of time is not a BackendError').toBe(ErrorCode.Backend);
      expect(performance.now() - optedIn, 'waitForBackend did not retry until waitMs').toBeGreaterThanOrEqual(waitMs - 20);
    } finally {
      await c.within('close of the unreachable provider answers', unreachable.close(), c.timing.callMs).catch(() => undefined);
    }
  });

  test("91. forceRelease of a key held through the same provider aborts that holder's signal (lock lost) before it resolves, for a lock and for every semaphore slot", async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const key = c.key('own');
    const lock = await c.within('acquire answers', locks.acquire(key, { waitMs: 0 }));
    const [abortedFirst] = await c.within('forceRelease answers', abortedWhenSettled(checked(locks.forceRelease(key)), [lock.signal]));
    expect(abortedFirst, "forceRelease resolved before its own holder's signal aborted").toBe(true);
    expect(codeOf(lock.signal.reason), 'the own holder of a force-released key was not told it lost it').toBe(ErrorCode.Lost);
    expect(
      locks.held().map((info) => info.key),
      'held() still lists a force-released lock',
    ).not.toContain(key);
    const again = await c.within('tryAcquire answers', locks.tryAcquire(key));
    expect(again, 'the force-released key was not free').not.toBeNull();
    await c.within('release answers', again!.release());
    const slotKey = c.key('own-slots');
    const semaphore = semaphoreOf(t, c, locks, slotKey, 2);
    if (!semaphore) return;
    const slots: Lock[] = [];
    for (let i = 0; i < 2; i++) slots.push((await c.within('a slot is granted', semaphore.tryAcquire()))!);
    expect(slots.every(Boolean), 'a free semaphore refused a slot').toBe(true);
    const told = await c.within(
      'forceRelease of the semaphore answers',
      abortedWhenSettled(
        checked(locks.forceRelease(slotKey)),
        slots.map((slot) => slot.signal),
      ),
    );
    expect(told, "forceRelease resolved before every own slot holder's signal aborted").toEqual([true, true]);
    for (const slot of slots) expect(codeOf(slot.signal.reason)).toBe(ErrorCode.Lost);
  });
}

async function checked(forced: Promise<boolean>): Promise<void> {
  expect(await forced, 'forceRelease of a held key answered that nothing was freed').toBe(true);
}
