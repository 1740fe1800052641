import type { LockInfo, LockProvider } from '@holdfast/core';
import { expect, test } from 'vitest';
import { TermLog } from './election-terms.js';
import type { CaseFactory } from './suite-types.js';
import { delay } from './support.js';
import { trackTimers } from './timer-tracker.js';

/** Collects what a for-await loop over observe() sees, and when it ended. */
function watch(provider: LockProvider, key: string, signal?: AbortSignal): { seen: (LockInfo | null)[]; ended: Promise<void> } {
  const seen: (LockInfo | null)[] = [];
  const ended = (async () => {
    for await (const holder of provider.observe(key, { signal })) seen.push(holder);
  })();
  return { seen, ended };
}

export function electionLossCases(cases: CaseFactory): void {
  test('76. a leader whose lock is force-released: its work stops before another term starts (or by its next renewal where the target says so), the fence refuses every stale write, and it campaigns again', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const admin = await c.provider();
    const key = c.key('ousted');
    // Long enough that no renewal misses its deadline on a loaded machine: only the forced releases may end a term.
    const ttlMs = Math.max(c.timing.shortTtlMs, 2 * c.timing.slackMs);
    const log = new TermLog(key, ttlMs);
    const { terms, overlaps, refused } = log;
    // Told at its next renewal: the old term may still run (its writes then refused by the fence) for at most that long.
    const toldAtRenewal = c.target.forcedReleaseToldAtRenewal !== undefined;
    const elections = [log.candidate(a)];
    try {
      await c.until('the first candidate leads', () => terms.length === 1, c.timing.callMs);
      elections.push(log.candidate(b));
      // A holder may learn of a forced release as late as its next renewal; the order of the two events is what is checked.
      const bound = ttlMs + c.timing.graceMs + c.timing.slackMs;
      for (let round = 1; round <= 3; round++) {
        const leader = terms.at(-1)!;
        expect(await c.within('forceRelease answers', admin.forceRelease(key)), `round ${round}: forceRelease of the leader's key`).toBe(
          true,
        );
        await c.until(`round ${round}: the ousted leader's work is stopped`, () => leader.abortedAt() !== undefined, bound);
        await c.until(`round ${round}: another term starts after the forced release`, () => terms.length === round + 1, bound);
      }
      if (!toldAtRenewal) {
        expect(overlaps, 'a term started while a force-released leader still ran').toEqual([]);
        expect(refused, 'the fenced store saw two terms overlap').toEqual([]);
      }
      for (let i = 1; i < terms.length; i++) {
        expect(terms[i]!.token > terms[i - 1]!.token, `term ${i + 1}'s token is not above term ${i}'s`).toBe(true);
        const stoppedAt = terms[i - 1]!.abortedAt()!;
        if (!toldAtRenewal) {
          expect(stoppedAt, `term ${i + 1} started before term ${i}'s signal aborted`).toBeLessThanOrEqual(terms[i]!.startedAt);
        } else {
          // The next renewal comes a third of the TTL after the last one: the old term may outlive the new one's start by that.
          expect(stoppedAt - terms[i]!.startedAt, `term ${i} ran on past its next renewal after term ${i + 1} started`).toBeLessThanOrEqual(
            ttlMs / 3 + c.timing.graceMs + c.timing.slackMs,
          );
        }
      }
      // The first leader was ousted in round 1: it must be in the running again, leading a later term or taking over now.
      if (terms.slice(1).every((term) => term.owner !== a.owner)) {
        await c.within('the other candidate resigns', elections[1]!.resign());
        await c.until('the candidate ousted by a forced release campaigns again and leads', () => terms.at(-1)!.owner === a.owner, bound);
      }
      expect(
        elections.reduce((sum, election) => sum + election.terms, 0),
        'the candidates counted other terms than they led',
      ).toBe(terms.length);
    } finally {
      await c.within('every candidate resigns', Promise.all(elections.map((election) => election.resign())));
    }
    expect(await c.within('inspect answers', admin.inspect(key)), 'the key is still held after every candidate resigned').toBeNull();
  });

  test('77. observe() ends when its provider closes and when its signal aborts, leaving no timer or backend wait behind', async (t) => {
    const c = cases(t);
    const holder = await c.provider();
    const key = c.key('observed-until-close');
    const lock = await c.within('tryAcquire answers', holder.tryAcquire(key));
    expect(lock, 'a free key was refused').not.toBeNull();
    const timers = trackTimers();
    const openWaits = c.target.openWaits?.bind(c.target);
    const waitsBefore = openWaits ? await c.within('openWaits answers', Promise.resolve(openWaits())) : undefined;
    /** The backend's open waits are back to what they were before (where the target can count them). */
    const noWaitLeft = async (after: string): Promise<void> => {
      if (!openWaits || waitsBefore === undefined) return;
      let now = waitsBefore;
      const back = async (): Promise<boolean> => (now = await openWaits()) <= waitsBefore;
      await c.until(`the backend's open waits after ${after} fall back to ${waitsBefore}`, back, c.timing.callMs).catch(() => undefined);
      expect(now, `${after} left a wait open in the backend`).toBeLessThanOrEqual(waitsBefore);
    };
    try {
      for (const [what, target] of [
        ['a held key', key],
        ['a free key', c.key('free')],
      ] as const) {
        const closing = await c.provider();
        const byClose = watch(closing, target);
        const stop = new AbortController();
        const bySignal = watch(closing, target, stop.signal);
        await c.until(
          `observe() of ${what} reports its holder`,
          () => byClose.seen.length >= 1 && bySignal.seen.length >= 1,
          c.timing.callMs,
        );
        stop.abort();
        await c.within(`observe() of ${what} ends when its signal aborts`, bySignal.ended);
        await c.within('close() answers', closing.close());
        await c.within(`observe() of ${what} ends when its provider closes`, byClose.ended);
        expect(byClose.seen.length, `observe() of ${what} yielded after its provider closed`).toBe(1);
        await noWaitLeft(`the observe()s of ${what} ended`);
      }
      const left = timers.pending().filter((timer) => /observe/i.test(timer));
      expect(left, 'an ended observe() left a timer behind').toEqual([]);
    } finally {
      timers.stop();
    }
    await c.within('release answers', lock!.release());
  });
}

/**
 * Cases of this area that wait for leases to run out or to be renewed: registered with the expiry cases
 * (see index.ts), side by side with them, so that their waits overlap.
 */
export function observeRenewalCases(cases: CaseFactory): void {
  test.concurrent("78. observe() yields on a change of holder only, never on a renewal of the same holder's lease", async (t) => {
    const c = cases(t);
    const [a, observer] = await c.providers2();
    const key = c.key('renewed-observed');
    const ttlMs = c.timing.shortTtlMs;
    const stop = new AbortController();
    const { seen, ended } = watch(observer, key, stop.signal);
    try {
      await c.until('observe() reports the free key', () => seen.length >= 1, c.timing.callMs);
      const lock = await c.within('tryAcquire answers', a.tryAcquire(key, { ttlMs }));
      expect(lock, 'a free key was refused').not.toBeNull();
      const bound = c.timing.promptWakeMs + c.timing.slackMs;
      await c.until('observe() reports the holder', () => seen.length >= 2, bound);
      // Inherent: renewals happen only as time passes; several TTLs give several of them.
      const first = lock!.expiresAt?.getTime();
      await delay(Math.max(3 * ttlMs, ttlMs + c.timing.graceMs + c.timing.slackMs));
      if (first !== undefined) expect(lock!.expiresAt!.getTime(), 'the lock was not renewed while observed').toBeGreaterThan(first);
      expect(lock!.signal.aborted, 'the observed lock was lost').toBe(false);
      await c.within('release answers', lock!.release());
      await c.until('observe() reports the key free again', () => seen.length >= 3, bound);
      expect(
        seen.map((holder) => holder && `${holder.owner} #${holder.token}`),
        'observe() yielded on something other than a change of holder',
      ).toEqual([null, `${a.owner} #${lock!.token}`, null]);
    } finally {
      stop.abort();
      await c.within('observe() ends when its signal aborts', ended);
    }
  });
}
