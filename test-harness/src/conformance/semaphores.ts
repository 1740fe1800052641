import { ErrorCode, type LockProvider, type Semaphore } from '@holdfast/core';
import { expect, type TestContext, test } from 'vitest';
import { codeOf, lostWithin } from '../helpers/index.js';
import type { CaseFactory } from './suite-types.js';
import type { CaseContext } from './support.js';
import { skipBecause } from './support.js';

/** The semaphore, or null after skipping the case (with the reason printed) when the backend has none. */
export function semaphoreOf(t: TestContext, c: CaseContext, locks: LockProvider, key: string, limit: number): Semaphore | null {
  try {
    return locks.semaphore(key, limit);
  } catch (error) {
    if (codeOf(error) !== ErrorCode.Unsupported) throw error;
    skipBecause(t, `${c.target.name} has no semaphores: ${(error as Error).message}`);
    return null;
  }
}

export function semaphoreCases(cases: CaseFactory): void {
  test('59. a semaphore never has more than its limit of holders under contention across instances, and reaches it', async (t) => {
    const c = cases(t);
    const instances = [await c.provider(), await c.provider(), await c.provider()];
    const key = c.key('semaphore');
    const limit = 2;
    const semaphores = instances.map((locks) => semaphoreOf(t, c, locks, key, limit));
    if (semaphores.some((semaphore) => semaphore === null)) return;
    let holding = 0;
    let most = 0;
    let grants = 0;
    const tokens: bigint[] = [];
    // Long enough for grants to overlap where each grant is a serialized write of tens of ms (FerretDB).
    const holdMs = Math.max(5, c.timing.promptWakeMs / 20);
    const worker = async (semaphore: Semaphore): Promise<void> => {
      while (grants < 30) {
        const slot = await semaphore.acquire({ waitMs: 10 * (c.timing.promptWakeMs + c.timing.slackMs) });
        grants++;
        tokens.push(slot.token);
        most = Math.max(most, ++holding);
        await new Promise((resolve) => setTimeout(resolve, holdMs));
        holding--;
        await slot.release();
      }
    };
    const workers = semaphores.flatMap((semaphore) => [worker(semaphore!), worker(semaphore!)]);
    await c.within('30 slot grants between six workers', Promise.all(workers), 30 * (c.timing.promptWakeMs + c.timing.slackMs));
    expect(most, `more than ${limit} holders at once`).toBeLessThanOrEqual(limit);
    expect(most, `never ${limit} holders at once: a semaphore that behaves as a mutex`).toBe(limit);
    if (c.capabilities.fencing === 'strict') expect(new Set(tokens).size, 'two slot grants carried one token').toBe(tokens.length);
    expect(await c.within('holders() answers', semaphores[0]!.holders()), 'holders() after every slot was released').toEqual([]);
  });

  test("60. semaphore slots are independent: one holder's release, extend or loss leaves the others alone", async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key('slots');
    const semA = semaphoreOf(t, c, a, key, 2);
    const semB = semA && b.semaphore(key, 2);
    if (!semA || !semB) return;
    const first = await c.within('tryAcquire answers', semA.tryAcquire({ reason: 'slot one' }));
    const second = await c.within('tryAcquire answers', semB.tryAcquire({ reason: 'slot two' }));
    expect(first && second, 'a free slot was not granted').toBeTruthy();
    expect(await c.within('tryAcquire answers', semA.tryAcquire()), 'a third holder got a slot of a semaphore of 2').toBeNull();
    const holders = await c.within('holders() answers', semB.holders());
    expect(holders.map((holder) => holder.owner).sort(), 'holders() names other holders').toEqual([a.owner, b.owner].sort());
    expect(holders.map((holder) => holder.token).sort(), 'holders() reports other tokens').toEqual([first!.token, second!.token].sort());
    await c.within('extend answers', second!.extend());
    await c.within('release answers', first!.release());
    expect(second!.signal.aborted, "releasing one slot aborted another holder's signal").toBe(false);
    expect(await c.within('isHeld answers', second!.isHeld()), 'releasing one slot freed another').toBe(true);
    await expect(c.within('extend answers', first!.extend()), 'extend of a released slot').rejects.toMatchObject({
      code: ErrorCode.NotHeld,
    });
    const third = await c.within('tryAcquire answers', semA.tryAcquire());
    expect(third, 'a released slot was not granted again').not.toBeNull();
    if (c.capabilities.fencing === 'strict') expect(third!.token > second!.token, 'a later slot grant has a lower token').toBe(true);
    await c.within('release answers', Promise.all([second!.release(), third!.release()]));
  });

  test('61. a semaphore holder whose lease ran out is told, and its slot goes to a waiter; forceRelease frees every slot', async (t) => {
    const c = cases(t);
    const [holder, waiter] = await c.providers2();
    const key = c.key('lapsing-slot');
    const ttlMs = c.timing.shortTtlMs;
    const semHolder = semaphoreOf(t, c, holder, key, 1);
    if (!semHolder) return;
    const lapsing = await c.within('tryAcquire answers', semHolder.tryAcquire({ ttlMs, autoRenew: false }));
    expect(lapsing, 'a free slot was not granted').not.toBeNull();
    const bound = ttlMs + c.timing.graceMs + c.timing.slackMs;
    const taken = waiter.semaphore(key, 1).acquire({ waitMs: bound + c.timing.promptWakeMs });
    await lostWithin(lapsing!, ttlMs + c.timing.slackMs, 'the holder of a lapsed slot is told');
    const next = await c.within('a waiter gets the lapsed slot', taken, bound + c.timing.promptWakeMs + c.timing.slackMs);
    const extra = await c.within(
      'tryAcquire answers',
      holder
        .semaphore(key, 2)
        .tryAcquire()
        .catch((error: unknown) => error),
    );
    expect(codeOf(extra), 'a semaphore key in use with limit 1 accepted limit 2').toBe(ErrorCode.Conflict);
    expect(await c.within('forceRelease answers', waiter.forceRelease(key)), 'forceRelease of a held semaphore key said it was free').toBe(
      true,
    );
    await lostWithin(next, c.timing.callMs + c.timing.slackMs, 'a force-released slot holder is told');
    expect(await c.within('holders() answers', semHolder.holders()), 'holders() after forceRelease').toEqual([]);
  });

  test('62. semaphores reject bad limits before the backend is touched, and a key is either a lock or a semaphore', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const probe = semaphoreOf(t, c, locks, c.key('probe'), 1);
    if (!probe) return;
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 10_001, '2', undefined] as unknown[]) {
      let thrown: unknown;
      try {
        locks.semaphore(c.key('bad-limit'), bad as number);
      } catch (error) {
        thrown = error;
      }
      expect(codeOf(thrown), `semaphore(key, ${String(bad)}) is not an InvalidArgumentError`).toBe(ErrorCode.InvalidArgument);
    }
    const key = c.key('lock-or-semaphore');
    const lock = await c.within('tryAcquire answers', locks.tryAcquire(key));
    const asSemaphore = await c.within(
      'tryAcquire answers',
      locks
        .semaphore(key, 3)
        .tryAcquire()
        .catch((error: unknown) => error),
    );
    expect(codeOf(asSemaphore), "a held lock's key was used as a semaphore").toBe(ErrorCode.Conflict);
    await c.within('release answers', lock!.release());
    const slot = await c.within('tryAcquire answers', locks.semaphore(key, 3).tryAcquire());
    const asLock = await c.within(
      'tryAcquire answers',
      locks.tryAcquire(key).catch((error: unknown) => error),
    );
    expect(codeOf(asLock), 'a semaphore key in use was granted as a plain lock').toBe(ErrorCode.Conflict);
    await c.within('release answers', slot!.release());
  });
}
