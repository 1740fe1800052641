import { ErrorCode, type LockProvider, type MultiLock } from '@holdfast/core';
import { expect, test } from 'vitest';
import { abortedWithin, codeOf, rejection } from '../helpers/index.js';
import { BAD_KEYS } from './bad-input.js';
import type { CaseFactory } from './suite-types.js';
import type { CaseContext } from './support.js';

/** None of `keys` is held by anyone, as the backend says. */
async function expectAllFree(c: CaseContext, locks: LockProvider, keys: readonly string[], why: string): Promise<void> {
  for (const key of keys) expect(await c.within('inspect answers', locks.inspect(key)), `${why}: "${key}" is still held`).toBeNull();
}

export function multiKeyCases(cases: CaseFactory): void {
  test.concurrent('79. several keys are taken all or none, and overlapping sets from several instances never deadlock', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const keys = [c.key('m'), c.key('m'), c.key('m'), c.key('m')] as const;
    // All or none: one busy key leaves the caller holding nothing, however it gave up.
    const blocker = await c.within('tryAcquire answers', b.tryAcquire(keys[1], { ttlMs: 60_000 }));
    expect(blocker, 'a free key was refused').not.toBeNull();
    const wanted = [keys[2], keys[1], keys[0]];
    expect(await c.within('tryAcquireAll answers', a.tryAcquireAll(wanted)), 'tryAcquireAll with one key busy').toBeNull();
    await expectAllFree(c, b, [keys[0], keys[2]], 'tryAcquireAll answered null');
    expect(a.held(), 'tryAcquireAll answered null and its instance still holds keys').toEqual([]);
    const waitMs = c.timing.promptWakeMs;
    const timedOut = await c.within('acquireAll gives up', rejection(a.acquireAll(wanted, { waitMs })), waitMs + c.timing.callMs);
    expect(codeOf(timedOut), 'acquireAll of a busy set').toBe(ErrorCode.Timeout);
    const cancel = new AbortController();
    const aborted = rejection(a.acquireAll(wanted, { signal: cancel.signal }));
    setTimeout(() => cancel.abort(new Error('caller gave up')), 50);
    expect(codeOf(await c.within('an aborted acquireAll gives up', aborted)), 'acquireAll whose signal aborted').toBe(ErrorCode.Aborted);
    await expectAllFree(c, b, [keys[0], keys[2]], 'acquireAll failed');
    expect(a.held(), 'acquireAll failed and its instance still holds keys').toEqual([]);
    await c.within('release answers', blocker!.release());

    // Overlapping sets, each listed in its own order, from four instances at once: sorted taking means no cycle.
    const instances = [a, b, await c.provider(), await c.provider()];
    const sets = [
      [keys[0], keys[1], keys[2]],
      [keys[2], keys[1], keys[0]],
      [keys[3], keys[0], keys[2]],
      [keys[1], keys[3]],
    ];
    const holders = new Map<string, number>(keys.map((key) => [key, 0]));
    const overlaps: string[] = [];
    const lastToken = new Map<string, bigint>();
    const rounds = 6;
    const waitEach = 10 * (c.timing.promptWakeMs + c.timing.slackMs);
    const worker = async (locks: LockProvider, set: readonly string[]): Promise<void> => {
      for (let round = 0; round < rounds; round++) {
        const all: MultiLock = await locks.acquireAll(set, { waitMs: waitEach });
        expect([...all.tokens.keys()], 'a multi-key lock does not hold every key asked for, in sorted order').toEqual([...set].sort());
        for (const key of set) {
          if (holders.get(key)! > 0) overlaps.push(`"${key}" held twice at once`);
          holders.set(key, holders.get(key)! + 1);
          const token = all.tokens.get(key)!;
          if (c.capabilities.fencing === 'strict' && token <= (lastToken.get(key) ?? 0n)) overlaps.push(`"${key}" got a lower token`);
          lastToken.set(key, token);
        }
        await new Promise((resolve) => setTimeout(resolve, 3));
        for (const key of set) holders.set(key, holders.get(key)! - 1);
        await all.release();
      }
    };
    const work = Promise.all(sets.map((set, i) => worker(instances[i]!, set)));
    await c.within(
      'overlapping multi-key locks all finish (no deadlock)',
      work,
      rounds * sets.length * (c.timing.promptWakeMs + c.timing.slackMs),
    );
    expect(overlaps, 'exclusion broken by multi-key locks').toEqual([]);
    await expectAllFree(c, a, keys, 'every multi-key lock was released');
  });

  test.concurrent('80. a multi-key holder is told when one of its keys is lost, naming it', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const keys = [c.key('lose'), c.key('lose'), c.key('lose')];
    // Long enough that no renewal misses its deadline on a loaded machine: only the forced release may end a key.
    const ttlMs = Math.max(c.timing.shortTtlMs, 2 * c.timing.slackMs);
    const all = await c.within('acquireAll answers', a.acquireAll(keys, { ttlMs, waitMs: 0 }));
    for (const key of keys) {
      const info = await c.within('inspect answers', b.inspect(key));
      expect(info?.owner, `"${key}" of a multi-key lock is not held by its instance`).toBe(a.owner);
      if (c.capabilities.fencing === 'strict')
        expect(info?.token, `"${key}": the handle's token is not the backend's`).toBe(all.tokens.get(key));
      expect(all.locks.get(key)?.token, `"${key}": the per-key lock and the tokens disagree`).toBe(all.tokens.get(key));
    }
    expect(await c.within('forceRelease answers', b.forceRelease(keys[1]!)), 'forceRelease of a held key').toBe(true);
    const reason = await abortedWithin(all.signal, ttlMs + c.timing.graceMs + c.timing.slackMs, 'a multi-key holder is told it lost a key');
    expect(codeOf(reason), "the multi-key lock's signal reason").toBe(ErrorCode.Lost);
    expect((reason as { key?: string }).key, 'the reason does not name the lost key').toBe(keys[1]);
    expect(await c.within('isHeld answers', all.isHeld()), 'a multi-key lock with a lost key says it is held').toBe(false);
    expect(all.locks.get(keys[0]!)!.signal.aborted, 'losing one key aborted the lock of another').toBe(false);
    await c.within('release answers', all.release());
    await expectAllFree(c, b, [keys[0]!, keys[2]!], 'release() after a lost key');
  });

  test.concurrent('81. release() frees every key of a multi-key lock; extend() moves every lease; `await using` releases', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const keys = [c.key('free'), c.key('free'), c.key('free')];
    const all = await c.within('acquireAll answers', a.acquireAll(keys, { ttlMs: 60_000 }));
    expect(all.owner).toBe(a.owner);
    if (c.capabilities.renewal === 'per-lock' && all.expiresAt !== null) {
      const before = new Map(keys.map((key) => [key, all.locks.get(key)!.expiresAt!.getTime()]));
      await new Promise((resolve) => setTimeout(resolve, 20));
      await c.within('extend answers', all.extend(120_000));
      for (const key of keys) {
        const after = all.locks.get(key)!.expiresAt!.getTime();
        expect(after - before.get(key)!, `extend() did not move the lease of "${key}"`).toBeGreaterThan(30_000);
      }
    }
    for (const key of keys) expect(await c.within('tryAcquire answers', b.tryAcquire(key)), `"${key}" granted while held`).toBeNull();
    await c.within('release answers', all.release());
    expect(codeOf(all.signal.reason), "a released multi-key lock's signal reason").toBe(ErrorCode.Released);
    await c.within('a second release answers', all.release());
    expect(codeOf(await rejection(c.within('extend answers', all.extend()))), 'extend after release').toBe(ErrorCode.NotHeld);
    const after: bigint[] = [];
    for (const key of keys) {
      const lock = await c.within('tryAcquire answers', b.tryAcquire(key));
      expect(lock, `"${key}" was not freed by release()`).not.toBeNull();
      if (c.capabilities.fencing === 'strict')
        expect(lock!.token > all.tokens.get(key)!, `"${key}": a later grant has a lower token`).toBe(true);
      after.push(lock!.token);
      await c.within('release answers', lock!.release());
    }
    {
      await using scoped = await c.within('acquireAll answers', a.acquireAll(keys, { waitMs: 0 }));
      expect(scoped.keys).toEqual([...keys].sort());
    }
    await expectAllFree(c, b, keys, '`await using` ended');
  });

  test.concurrent('82. bad input to acquireAll and tryAcquireAll is a typed error before the backend is touched', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const unreachable = c.target.createUnreachableProvider ? await c.target.createUnreachableProvider() : undefined;
    const key = c.key('bad');
    const other = c.key('bad');
    const bad: [string, unknown][] = [
      ['no array', key],
      ['an empty list', []],
      ['a key twice', [key, other, key]],
      ['101 keys', Array.from({ length: 101 }, (_, i) => `${key}-${i}`)],
      ['a number among the keys', [key, 7]],
      ...BAD_KEYS(key).map(([why, badKey]): [string, unknown] => [`a key with ${why}`, [other, badKey]]),
    ];
    try {
      for (const provider of unreachable ? [locks, unreachable] : [locks]) {
        for (const [why, keys] of bad) {
          for (const call of [() => provider.tryAcquireAll(keys as string[]), () => provider.acquireAll(keys as string[], { waitMs: 0 })]) {
            const error = await c.within(`${why}: answers`, rejection(call(), why));
            expect(codeOf(error), `${why}`).toBe(ErrorCode.InvalidArgument);
          }
        }
        const ttl = await c.within('a bad ttl answers', rejection(provider.acquireAll([key, other], { ttlMs: -1 })));
        expect(codeOf(ttl), 'a negative ttl').toBe(ErrorCode.InvalidArgument);
      }
    } finally {
      await unreachable?.close();
    }
    expect(locks.held(), 'bad input left keys held').toEqual([]);
    await expectAllFree(c, locks, [key, other], 'bad input');
  });
}
