import { ErrorCode, type Lock, type LockProvider, type Semaphore } from '@holdfast/core';
import { expect, test } from 'vitest';
import { codeOf, lostWithin, rejection } from '../helpers/index.js';
import { semaphoreOf } from './semaphores.js';
import type { CaseFactory } from './suite-types.js';
import { type CaseContext, skipBecause } from './support.js';

/** A slot, or null when the key is busy or in use as something else (a conflict): for polling until a key is free. */
async function slotOrNull(semaphore: Semaphore): Promise<Lock | null> {
  return semaphore.tryAcquire().catch((error: unknown) => {
    if (codeOf(error) === ErrorCode.Conflict) return null;
    throw error;
  });
}

/** A plain lock, or null while the key is busy or still a semaphore's. */
async function lockOrNull(provider: LockProvider, key: string): Promise<Lock | null> {
  return provider.tryAcquire(key).catch((error: unknown) => {
    if (codeOf(error) === ErrorCode.Conflict) return null;
    throw error;
  });
}

/** Polls `take` until it returns a grant, within the lapse of a lease of `ttlMs` taken at `sentAt`. */
async function takeOnceLapsed(c: CaseContext, what: string, take: () => Promise<Lock | null>, ttlMs: number): Promise<Lock> {
  let got: Lock | null = null;
  await c.until(what, async () => (got = await take()) !== null, ttlMs + c.timing.graceMs + c.timing.slackMs, 20);
  return got!;
}

export function semaphoreLimitCases(cases: CaseFactory): void {
  test('68. slots and plain locks of one key share one strictly increasing token sequence', async (t) => {
    const c = cases(t);
    if (c.capabilities.fencing !== 'strict') return skipBecause(t, `${c.target.name} declares fencing "${c.capabilities.fencing}"`);
    const [a, b] = await c.providers2();
    const key = c.key('shared-tokens');
    if (!semaphoreOf(t, c, a, key, 2)) return;
    const tokens: [string, bigint][] = [];
    const plain = async (provider: LockProvider): Promise<void> => {
      const lock = await c.within('tryAcquire answers', provider.tryAcquire(key));
      expect(lock, 'a free key was refused as a plain lock').not.toBeNull();
      tokens.push(['lock', lock!.token]);
      await c.within('release answers', lock!.release());
    };
    const slots = async (provider: LockProvider, limit: number): Promise<void> => {
      const semaphore = provider.semaphore(key, limit);
      const held = [
        await c.within('tryAcquire answers', semaphore.tryAcquire()),
        await c.within('tryAcquire answers', semaphore.tryAcquire()),
      ];
      expect(held.every(Boolean), 'a free slot was refused').toBe(true);
      for (const slot of held) tokens.push([`slot of ${limit}`, slot!.token]);
      await c.within('release answers', Promise.all(held.map((slot) => slot!.release())));
    };
    await plain(a);
    await slots(b, 2);
    await plain(b);
    await slots(a, 3);
    const forced = await c.within('tryAcquire answers', a.semaphore(key, 2).tryAcquire());
    tokens.push(['force-released slot', forced!.token]);
    expect(await c.within('forceRelease answers', b.forceRelease(key)), 'forceRelease of a held semaphore key').toBe(true);
    await plain(a);
    for (let i = 1; i < tokens.length; i++) {
      const [what, token] = tokens[i]!;
      const [before, previous] = tokens[i - 1]!;
      expect(token > previous, `the token of a ${what} (${token}) is not above that of the ${before} before it (${previous})`).toBe(true);
    }
  });
}

/**
 * Cases of this area that wait for leases to run out or to be renewed: side by side with each other
 * (see index.ts), so that their waits overlap.
 */
export function semaphoreLapseCases(cases: CaseFactory): void {
  test.concurrent('67. another limit for a semaphore key in use is a conflict, lower or higher; the limit is not sticky once the last holder is gone', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key('limits');
    const three = semaphoreOf(t, c, a, key, 3);
    if (!three) return;
    const slot = await c.within('tryAcquire answers', three.tryAcquire());
    expect(slot, 'a free slot was not granted').not.toBeNull();
    for (const other of [1, 2, 4, 10]) {
      for (const provider of [a, b]) {
        const tried = await c.within(
          'tryAcquire answers',
          rejection(provider.semaphore(key, other).tryAcquire(), `semaphore(key, ${other}).tryAcquire()`),
        );
        expect(codeOf(tried), `a semaphore of 3 in use accepted limit ${other} (tryAcquire)`).toBe(ErrorCode.Conflict);
      }
      // A wait long enough for one attempt on a loaded server: a conflict is an answer, never a reason to wait.
      const waited = await c.within(
        'acquire answers',
        rejection(b.semaphore(key, other).acquire({ waitMs: c.timing.slackMs }), `semaphore(key, ${other}).acquire()`),
      );
      expect(codeOf(waited), `a semaphore of 3 in use accepted limit ${other} (acquire)`).toBe(ErrorCode.Conflict);
    }
    expect(
      (await c.within('holders() answers', three.holders())).map((h) => h.token),
      'a refused limit changed the holders',
    ).toEqual([slot!.token]);

    // Released: the key is free for another limit, then for a plain lock, then for a semaphore again.
    const released = async (): Promise<void> => {
      await c.within('release answers', slot!.release());
      const one = await c.within('tryAcquire answers', slotOrNull(b.semaphore(key, 1)));
      expect(one, 'the limit of a released semaphore stuck: another limit was refused (busy or a conflict)').not.toBeNull();
      const old = await c.within('tryAcquire answers', rejection(a.semaphore(key, 3).tryAcquire(), 'the old limit'));
      expect(codeOf(old), 'the old limit was accepted while the new one is in use').toBe(ErrorCode.Conflict);
      await c.within('release answers', one!.release());
      const plain = await c.within('tryAcquire answers', lockOrNull(a, key));
      expect(plain, 'a released semaphore key could not be used as a plain lock (busy or a conflict)').not.toBeNull();
      await c.within('release answers', plain!.release());
      const five = await c.within('tryAcquire answers', slotOrNull(b.semaphore(key, 5)));
      expect(five, 'a released plain lock key could not be a semaphore of another limit (busy or a conflict)').not.toBeNull();
      await c.within('release answers', five!.release());
    };

    // Lapsed: every holder's lease ran out; one key is taken with another limit, one as a plain lock
    // (two keys side by side, so the case waits for one lapse, not two).
    const ttlMs = c.timing.shortTtlMs;
    const lapsed = async (what: string, take: (key: string) => Promise<Lock | null>): Promise<void> => {
      const lapsedKey = c.key('lapsed-limit');
      const two = a.semaphore(lapsedKey, 2);
      const lapsing = await c.within(
        'tryAcquire answers',
        Promise.all([two.tryAcquire({ ttlMs, autoRenew: false }), two.tryAcquire({ ttlMs, autoRenew: false })]),
      );
      expect(lapsing.every(Boolean), 'a free slot was not granted').toBe(true);
      const next = await takeOnceLapsed(c, `${what} is granted once every slot lapsed`, () => take(lapsedKey), ttlMs);
      for (const gone of lapsing) await lostWithin(gone!, c.timing.slackMs, 'a lapsed slot holder is told');
      await c.within('release answers', next.release());
    };
    await Promise.all([
      released(),
      lapsed('another limit', (lapsedKey) => slotOrNull(b.semaphore(lapsedKey, 4))),
      lapsed('a plain lock', (lapsedKey) => lockOrNull(b, lapsedKey)),
    ]);
  });

  test.concurrent('72. holders() hides slots whose lease ran out; once every slot lapsed a plain lock takes the key', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key('lapsed-slots');
    const ttlMs = c.timing.shortTtlMs;
    const semA = semaphoreOf(t, c, a, key, 2);
    if (!semA) return;
    // Two keys side by side, so that the case waits for one lapse, not two.
    const oneLapses = async (): Promise<void> => {
      const lapsing = await c.within('tryAcquire answers', semA.tryAcquire({ ttlMs, autoRenew: false }));
      // Long enough that no renewal misses its deadline on a loaded machine: only the other slot may lapse.
      const kept = await c.within('tryAcquire answers', b.semaphore(key, 2).tryAcquire({ ttlMs: Math.max(ttlMs, 2 * c.timing.slackMs) }));
      expect(lapsing && kept, 'a free slot was not granted').toBeTruthy();
      const tokensOf = async (): Promise<bigint[]> => (await b.semaphore(key, 2).holders()).map((holder) => holder.token);
      expect(await c.within('holders() answers', tokensOf()), 'holders() misses a held slot').toEqual([lapsing!.token, kept!.token]);
      await c.until(
        'holders() stops showing a slot whose lease ran out',
        async () => (await tokensOf()).length === 1,
        ttlMs + c.timing.graceMs + c.timing.slackMs,
        20,
      );
      expect(await c.within('holders() answers', tokensOf()), 'holders() hid the slot still held').toEqual([kept!.token]);
      await lostWithin(lapsing!, c.timing.slackMs, 'a lapsed slot holder is told');
      expect(await c.within('isHeld answers', lapsing!.isHeld()), 'a lapsed slot says it is held').toBe(false);
      expect(kept!.signal.aborted, "a lapsed slot took the other holder's signal with it").toBe(false);
      await c.within('release answers', kept!.release());
    };
    const allLapse = async (): Promise<void> => {
      const allKey = c.key('all-lapsed');
      const all = semaphoreOf(t, c, a, allKey, 3)!;
      const slots = await c.within('tryAcquire answers', Promise.all([0, 1, 2].map(() => all.tryAcquire({ ttlMs, autoRenew: false }))));
      expect(slots.every(Boolean), 'a free slot was not granted').toBe(true);
      const lock = await takeOnceLapsed(c, 'a plain lock takes the key once every slot lapsed', () => lockOrNull(b, allKey), ttlMs);
      expect(await c.within('holders() answers', all.holders()), 'holders() of a key held as a plain lock after its slots lapsed').toEqual(
        [],
      );
      await c.within('release answers', lock.release());
    };
    await Promise.all([oneLapses(), allLapse()]);
  });
}
