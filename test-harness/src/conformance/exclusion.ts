import { ErrorCode, type Lock, MAX_KEY_BYTES } from '@holdfast/core';
import { expect, test } from 'vitest';
import { codeOf, rejection } from '../helpers/index.js';
import { BAD_KEYS } from './bad-input.js';
import type { CaseFactory } from './suite-types.js';

/**
 * Exclusion cases repeat until they made this many grant attempts or ran out of their time budget,
 * whichever comes first, and never fewer than their minimum: fast backends do thousands, slow ones
 * still enough that a double grant one attempt in 40 is caught.
 */
const TARGET_ATTEMPTS = 4000;
const BUDGET_MS = 1000;

export function exclusionCases(cases: CaseFactory): void {
  test('1. tryAcquire on a free key returns a lock and inspect shows it held', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const key = c.key();
    const lock = await c.within('tryAcquire of a free key answers', locks.tryAcquire(key, { reason: 'conformance 1' }));
    expect(lock, 'tryAcquire of a free key returned no lock').not.toBeNull();
    expect(lock!.key).toBe(key);
    expect(lock!.owner, 'the lock carries its provider as owner').toBe(locks.owner);
    expect(lock!.signal.aborted, 'a fresh lock has an aborted signal').toBe(false);
    const info = await c.within('inspect answers', locks.inspect(key));
    expect(info?.owner, 'inspect does not show the new holder').toBe(locks.owner);
    expect(info?.token, 'inspect shows another token than the grant').toBe(lock!.token);
    expect(await c.within('isHeld answers', lock!.isHeld()), 'a fresh lock is not held').toBe(true);
  });

  test('2. a held key is refused at once, through the same and through another instance', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const held = await c.within('tryAcquire of a free key answers', a.tryAcquire(key));
    expect(held).not.toBeNull();
    expect(
      await c.within('tryAcquire of a held key answers (same instance)', a.tryAcquire(key)),
      'a held key was granted again to its holder',
    ).toBeNull();
    expect(
      await c.within('tryAcquire of a held key answers (other instance)', b.tryAcquire(key)),
      'a held key was granted to another instance',
    ).toBeNull();
    expect(await c.within('isHeld answers', held!.isHeld()), 'the holder lost the lock to a refused tryAcquire').toBe(true);
  });

  test('3. different keys never interfere', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const first = await c.within('tryAcquire answers', a.tryAcquire(c.key('first')));
    const second = await c.within('tryAcquire answers', b.tryAcquire(c.key('second')));
    expect(first, 'a free key was refused').not.toBeNull();
    expect(second, 'a free key was refused because another key is held').not.toBeNull();
    await c.within('release answers', first!.release());
    expect(await c.within('isHeld answers', second!.isHeld()), 'releasing one key freed another').toBe(true);
  });

  test('4. release then immediate re-acquire works many times in a row, across instances', async (t) => {
    const c = cases(t);
    const providers = await c.providers2();
    const key = c.key();
    for (let round = 0; round < 10; round++) {
      const lock = await c.within(`round ${round}: tryAcquire answers`, providers[round % 2]!.tryAcquire(key));
      expect(lock, `round ${round}: a just-released key was refused`).not.toBeNull();
      await c.within(`round ${round}: release answers`, lock!.release());
    }
    expect(await c.within('inspect answers', providers[0].inspect(key)), 'a released key is still reported held').toBeNull();
  });

  test('5. concurrent contenders across instances never overlap (read-sleep-write counter)', async (t) => {
    const c = cases(t);
    const providers = [await c.provider(), await c.provider(), await c.provider()];
    const key = c.key();
    let counter = 0;
    let grants = 0;
    let inside = 0;
    let maxInside = 0;
    const workers = 6;
    const minPerWorker = 4;
    const budgetEnd = performance.now() + BUDGET_MS;
    // Each acquire may wait for every other worker's grant, each handed over within the prompt-wake bound.
    const waitMs = workers * (c.timing.promptWakeMs + 100) + c.timing.slackMs;
    const worker = async (index: number): Promise<void> => {
      const provider = providers[index % providers.length]!;
      for (let mine = 0; mine < minPerWorker || (grants < TARGET_ATTEMPTS && performance.now() < budgetEnd); mine++) {
        const lock = await c.within(
          'a contender is granted the lock in turn',
          provider.acquire(key, { waitMs }),
          waitMs + c.timing.slackMs,
        );
        grants++;
        inside++;
        maxInside = Math.max(maxInside, inside);
        const read = counter;
        // A macrotask, not a timer: whatever else is due (a second grant) runs while this one is inside.
        await new Promise((resolve) => setImmediate(resolve));
        counter = read + 1;
        inside--;
        await c.within('release answers', lock.release());
      }
    };
    await Promise.all(Array.from({ length: workers }, (_, index) => worker(index)));
    expect(maxInside, `two contenders were inside the critical section at once (${grants} grants)`).toBe(1);
    expect(counter, 'the counter lost updates: grants overlapped').toBe(grants);
    expect(grants, "fewer grants than every worker's minimum").toBeGreaterThanOrEqual(workers * minPerWorker);
  });

  test('6. keys are case-sensitive; unicode and long keys work; bad keys are rejected, never aliased', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const base = c.key('Case');
    const upper = await c.within('tryAcquire answers', locks.tryAcquire(base));
    const lower = await c.within('tryAcquire answers', locks.tryAcquire(base.toLowerCase()));
    expect(upper).not.toBeNull();
    expect(lower, 'keys differing only in case were aliased').not.toBeNull();
    const unicode = `${c.key()}/ключ-键-🔒 +&?%#=`;
    const unicodeLock = await c.within('tryAcquire of a unicode key answers', locks.tryAcquire(unicode));
    expect(unicodeLock, 'a unicode key was refused').not.toBeNull();
    expect((await c.within('inspect answers', locks.inspect(unicode)))?.key, 'inspect of a unicode key').toBe(unicode);
    const long = (c.key('long') + '/').padEnd(MAX_KEY_BYTES, 'x');
    expect(Buffer.byteLength(long)).toBe(MAX_KEY_BYTES);
    expect(
      await c.within('tryAcquire of a key at the byte limit answers', locks.tryAcquire(long)),
      'a key at the byte limit was refused',
    ).not.toBeNull();
    for (const [name, bad] of [['one byte over the limit', long + 'x'], ...BAD_KEYS(base)] as const) {
      const error = await c.within(`tryAcquire(${name}) answers`, rejection(locks.tryAcquire(bad), `tryAcquire(${name})`));
      expect(codeOf(error), `tryAcquire of a bad key (${name}) was not an InvalidArgumentError`).toBe(ErrorCode.InvalidArgument);
    }
  });

  test('7. not reentrant: a key held through this instance is busy for it too', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const key = c.key();
    const lock = await c.within('tryAcquire answers', locks.tryAcquire(key));
    expect(lock).not.toBeNull();
    expect(await c.within('tryAcquire answers', locks.tryAcquire(key)), 'the same instance was granted its own held key').toBeNull();
    const error = await c.within('acquire with a short wait answers', rejection(locks.acquire(key, { waitMs: 50 })));
    expect(codeOf(error), 'a reentrant acquire did not time out').toBe(ErrorCode.Timeout);
    expect(await c.within('isHeld answers', lock!.isHeld())).toBe(true);
  });

  test('35. keys that nearly collide stay distinct: parent and child paths, long shared prefixes, keys at the byte limit', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const parent = c.key('parent');
    const prefix = `${c.key('shared')}/`.padEnd(80, 'p');
    const limitBase = `${c.key('limit')}/`.padEnd(MAX_KEY_BYTES - 1, 'l');
    const atLimit = (tail: string): string => limitBase + tail;
    const pairs: [string, string, string][] = [
      ['a parent and its child path', parent, `${parent}/child`],
      ['two keys sharing an 80-character prefix', `${prefix}-one`, `${prefix}-two`],
      ['two keys at the byte limit differing in the last byte', atLimit('1'), atLimit('2')],
    ];
    expect(pairs[1]![1].slice(0, 64), 'the long-prefix pair does not share 64 characters').toBe(pairs[1]![2].slice(0, 64));
    for (const [what, first, second] of pairs) {
      expect(Buffer.byteLength(first) <= MAX_KEY_BYTES && Buffer.byteLength(second) <= MAX_KEY_BYTES).toBe(true);
      const one = await c.within(`${what}: tryAcquire answers`, a.tryAcquire(first));
      expect(one, `${what}: the first key was refused`).not.toBeNull();
      const two = await c.within(`${what}: tryAcquire answers`, b.tryAcquire(second));
      expect(two, `${what}: were aliased, the second was refused`).not.toBeNull();
      expect((await c.within(`${what}: inspect answers`, b.inspect(first)))?.token, `${what}: inspect mixed them up`).toBe(one!.token);
      expect((await c.within(`${what}: inspect answers`, a.inspect(second)))?.token, `${what}: inspect mixed them up`).toBe(two!.token);
      await c.within(`${what}: release answers`, one!.release());
      expect(await c.within(`${what}: isHeld answers`, two!.isHeld()), `${what}: releasing one freed the other`).toBe(true);
      expect(
        await c.within(`${what}: tryAcquire answers`, a.tryAcquire(second)),
        `${what}: the second key became free with the first`,
      ).toBeNull();
    }
  });

  test('36. racing tryAcquire calls from several instances: at most one wins, round after round', async (t) => {
    const c = cases(t);
    const providers = [await c.provider(), await c.provider(), await c.provider(), await c.provider()];
    const key = c.key();
    const contenders = 8;
    // 30 rounds of 7 busy answers miss a one-in-40 double grant with odds (39/40)^210, under 1 %.
    const minRounds = 30;
    const budgetEnd = performance.now() + BUDGET_MS;
    let attempts = 0;
    let rounds = 0;
    let wonRounds = 0;
    while (rounds < minRounds || (attempts < TARGET_ATTEMPTS && performance.now() < budgetEnd)) {
      const answers = await c.within(
        `round ${rounds}: ${contenders} racing tryAcquire calls answer`,
        Promise.all(Array.from({ length: contenders }, (_, i) => providers[i % providers.length]!.tryAcquire(key))),
      );
      attempts += contenders;
      const won = answers.filter((lock): lock is Lock => lock !== null);
      expect(
        won.length,
        `round ${rounds}: ${won.length} of ${contenders} racing tryAcquire calls were granted (${attempts} attempts so far)`,
      ).toBeLessThanOrEqual(1);
      if (won.length === 1) wonRounds++;
      await c.within(`round ${rounds}: release answers`, Promise.all(won.map((lock) => lock.release())));
      rounds++;
    }
    expect(attempts, 'too few racing attempts to catch an occasional double grant').toBeGreaterThanOrEqual(minRounds * contenders);
    // A free key raced for must be granted to someone; "always null" is no lock at all.
    expect(wonRounds, `only ${wonRounds} of ${rounds} races on a free key were won by anyone`).toBeGreaterThanOrEqual(rounds / 2);
  });
}
