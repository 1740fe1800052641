import { type Election, ErrorCode, type Leadership, type LockInfo } from '@holdfast/core';
import { expect, test } from 'vitest';
import { codeOf } from '../helpers/index.js';
import type { CaseFactory } from './suite-types.js';

/** A promise with its resolver, for work functions the case finishes by hand. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
}

export function electionCases(cases: CaseFactory): void {
  test("53. one leader at a time: candidates on several instances never lead together; every term's token is above the last", async (t) => {
    const c = cases(t);
    const instances = [await c.provider(), await c.provider(), await c.provider()];
    const key = c.key('leader');
    let leaders = 0;
    let overlaps = 0;
    const terms: { owner: string; token: bigint }[] = [];
    const elections: Election[] = instances.map((locks) =>
      locks.elect(
        key,
        async ({ token, signal }: Leadership) => {
          if (++leaders > 1) overlaps++;
          terms.push({ owner: locks.owner, token });
          // Lead briefly, then end the term so that another candidate leads next.
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, 30);
            signal.addEventListener(
              'abort',
              () => {
                clearTimeout(timer);
                resolve();
              },
              { once: true },
            );
          });
          leaders--;
        },
        { retryDelayMs: 10 },
      ),
    );
    try {
      await c.until('candidates take 9 terms between them', () => terms.length >= 9, 9 * (c.timing.promptWakeMs + c.timing.slackMs), 5);
    } finally {
      await c.within('every candidate resigns', Promise.all(elections.map((election) => election.resign())));
    }
    expect(overlaps, 'two instances led at the same time').toBe(0);
    for (let i = 1; i < terms.length; i++) {
      expect(
        terms[i]!.token > terms[i - 1]!.token,
        `term ${i + 1}'s token ${terms[i]!.token} is not above term ${i}'s ${terms[i - 1]!.token}`,
      ).toBe(true);
    }
    expect(
      elections.every((election) => !election.leading),
      'an instance still leads after resign()',
    ).toBe(true);
    expect(
      await c.within('inspect answers', instances[0]!.inspect(key)),
      'the key is still held after every candidate resigned',
    ).toBeNull();
  });

  test("54. resign() hands leadership over promptly; the resigning leader's work sees its signal abort first", async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key('resign');
    const roundTrip = await c.roundTripMs(a, key);
    let workSignal: AbortSignal | undefined;
    const first = a.elect(key, async ({ signal }) => {
      workSignal = signal;
      await untilAborted(signal);
    });
    await c.until('the first candidate leads', () => first.leading, c.timing.callMs);
    let ledAt = 0;
    let secondToken = 0n;
    const second = b.elect(key, async ({ signal, token }) => {
      ledAt = Date.now();
      secondToken = token;
      await untilAborted(signal);
    });
    try {
      const resignedAt = Date.now();
      await c.within('resign() returns', first.resign());
      expect(workSignal?.aborted, "the resigning leader's work signal did not abort").toBe(true);
      expect(first.leading, 'a resigned instance still says it leads').toBe(false);
      await c.until('the other candidate leads after resign()', () => ledAt > 0, c.timing.promptWakeMs + c.promptBoundMs(roundTrip));
      expect(ledAt - resignedAt, 'the hand-over after resign() was slow').toBeLessThanOrEqual(
        c.timing.promptWakeMs + c.promptBoundMs(roundTrip),
      );
      const info = await c.within('inspect answers', b.inspect(key));
      expect(info?.owner, 'the key is not held by the new leader').toBe(b.owner);
      expect(info?.token, "inspect reports another token than the new leader's").toBe(secondToken);
      await c.within('done resolves after resign()', first.done);
      expect(first.terms, 'the resigned candidate counted other than one term').toBe(1);
    } finally {
      await c.within('resign() returns', second.resign());
    }
  });

  test('55. observe() sees every change of holder, woken by the backend', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const observer = await c.provider();
    const key = c.key('observed');
    const seen: (LockInfo | null)[] = [];
    const stop = new AbortController();
    const watching = (async () => {
      for await (const holder of observer.observe(key, { signal: stop.signal })) seen.push(holder);
    })();
    try {
      await c.until('observe() reports the free key', () => seen.length >= 1, c.timing.callMs);
      expect(seen[0], 'observe() of a free key did not start with null').toBeNull();
      const bound = c.timing.promptWakeMs + c.timing.slackMs;
      const first = await c.within('tryAcquire answers', a.tryAcquire(key));
      await c.until('observe() reports the first holder', () => seen.at(-1)?.owner === a.owner, bound);
      await c.within('release answers', first!.release());
      const second = await c.within('acquire answers', b.acquire(key, { waitMs: bound }));
      await c.until('observe() reports the second holder', () => seen.at(-1)?.owner === b.owner, bound);
      await c.within('release answers', second.release());
      await c.until('observe() reports the key free again', () => seen.at(-1) === null, bound);
      const holders = seen.filter((holder): holder is LockInfo => holder !== null);
      expect(
        holders.map((holder) => holder.owner),
        'observe() missed or repeated a holder',
      ).toEqual([a.owner, b.owner]);
      expect(
        holders.map((holder) => holder.token),
        'observe() reports other tokens than the grants',
      ).toEqual([first!.token, second.token]);
    } finally {
      stop.abort();
      await c.within('observe() ends when its signal aborts', watching);
    }
  });

  test('56. a leader work that throws ends its term and is reported; one that ignores its signal is reported and keeps the lock until it returns', async (t) => {
    const c = cases(t);
    const [locks, other] = await c.providers2();
    const errors: Error[] = [];
    const throwing = c.key('throws');
    let calls = 0;
    const flaky = locks.elect(
      throwing,
      async ({ signal }) => {
        if (++calls === 1) throw new Error('first term fails');
        await untilAborted(signal);
      },
      { retryDelayMs: 20, onError: (error) => errors.push(error) },
    );
    try {
      await c.until('the candidate leads again after its work threw', () => flaky.terms === 2 && flaky.leading, c.timing.callMs);
      expect(errors.map(codeOf), 'a failed work was not reported as LeaderWorkError').toEqual([ErrorCode.LeaderWorkFailed]);
      expect((errors[0]!.cause as Error).message, "the report does not carry the work's error").toBe('first term fails');
    } finally {
      await c.within('resign() returns', flaky.resign());
    }

    const stubborn = c.key('stubborn');
    const finish = deferred();
    const overrunning = locks.elect(stubborn, () => finish.promise, { graceMs: 100, onError: (error) => errors.push(error) });
    await c.until('the stubborn candidate leads', () => overrunning.leading, c.timing.callMs);
    const resigned = overrunning.resign();
    await c.until(
      'a work that ignores its signal is reported',
      () => errors.some((error) => codeOf(error) === ErrorCode.LeaderWorkOverran),
      100 + c.timing.slackMs,
    );
    expect(
      await c.within('tryAcquire answers', other.tryAcquire(stubborn)),
      'another instance took the lock while the overrunning work still ran',
    ).toBeNull();
    finish.resolve();
    await c.within('resign() returns once the work returned', resigned);
    expect(await c.within('inspect answers', other.inspect(stubborn)), 'the lock is still held after the work returned').toBeNull();
  });

  test('57. elect() and observe() reject bad input with a typed error before anything runs', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const work = async (): Promise<void> => undefined;
    const attempts: [string, () => unknown][] = [
      ['a bad key', () => locks.elect('bad//key', work)],
      ['a work that is not a function', () => locks.elect(c.key(), 'work' as never)],
      ['a negative graceMs', () => locks.elect(c.key(), work, { graceMs: -1 })],
      ['a signal that is not an AbortSignal', () => locks.elect(c.key(), work, { signal: {} as AbortSignal })],
      ['observe() of a bad key', () => locks.observe('')],
    ];
    for (const [what, attempt] of attempts) {
      let thrown: unknown;
      try {
        attempt();
      } catch (error) {
        thrown = error;
      }
      expect(codeOf(thrown), `${what} is not an InvalidArgumentError`).toBe(ErrorCode.InvalidArgument);
    }
    expect(locks.held(), 'bad input took a lock').toEqual([]);
  });
}
