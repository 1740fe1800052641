import { ErrorCode, type LockInfo, type LockProvider } from '@holdfast/core';
import { expect, test } from 'vitest';
import type { CaseFactory } from './suite-types.js';

const keysOf = (infos: readonly LockInfo[]): string[] => infos.map((info) => info.key);

export function listingCases(cases: CaseFactory): void {
  test("50. list() shows exactly the held keys under a prefix with their holders; held() shows only this instance's", async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const observer = await c.provider();
    const base = c.key('listed');
    const [first, second, third] = [`${base}/a`, `${base}/b`, `${base}/c`];
    const outside = `${base}x`;
    // b's key was a's before: a listing must name its current holder.
    await c.within(
      'tryAcquire and release answer',
      a.tryAcquire(second).then((earlier) => earlier?.release()),
    );
    const lockA = await c.within('tryAcquire answers', a.tryAcquire(first, { reason: 'listed by a' }));
    const lockB = await c.within('tryAcquire answers', b.tryAcquire(second, { reason: 'listed by b' }));
    const released = await c.within('tryAcquire answers', a.tryAcquire(third));
    const sibling = await c.within('tryAcquire answers', b.tryAcquire(outside));
    expect([lockA, lockB, released, sibling].every(Boolean), 'tryAcquire of a free key returned no lock').toBe(true);
    await c.within('release answers', released!.release());

    const listed = await c.within('list answers', observer.list({ prefix: `${base}/` }));
    expect(keysOf(listed), 'list() shows other keys than the held ones under the prefix, in key order').toEqual([first, second]);
    const [infoA, infoB] = listed;
    expect([infoA!.owner, infoB!.owner], 'list() names the wrong holders').toEqual([a.owner, b.owner]);
    expect([infoA!.token, infoB!.token], 'list() reports other tokens than the handles').toEqual([lockA!.token, lockB!.token]);
    expect([infoA!.reason, infoB!.reason], 'list() reports other reasons').toEqual(['listed by a', 'listed by b']);
    expect(keysOf(await c.within('list answers', observer.list({ prefix: base }))), 'a prefix is a plain string prefix').toEqual([
      first,
      second,
      outside,
    ]);
    expect(
      keysOf(await c.within('list answers', observer.list())).filter((key) => key.startsWith(base)),
      'list() without a prefix misses keys',
    ).toEqual([first, second, outside]);

    expect(keysOf(a.held()), 'held() shows other keys than this instance holds').toEqual([first]);
    expect(keysOf(b.held()), 'held() shows other keys than this instance holds').toEqual([second, outside].sort());
    expect(a.held()[0]!.token, 'held() reports another token than the handle').toBe(lockA!.token);
    expect(observer.held(), 'held() of an instance that holds nothing').toEqual([]);

    await c.within('release answers', Promise.all([lockA!.release(), lockB!.release(), sibling!.release()]));
    expect(await c.within('list answers', observer.list({ prefix: base })), 'list() still shows released locks').toEqual([]);
    expect(a.held(), 'held() still shows a released lock').toEqual([]);
  });

  test('51. list() hides locks whose lease ran out', async (t) => {
    const c = cases(t);
    const [holder, observer] = await c.providers2();
    const base = c.key('lapsing');
    const ttlMs = c.timing.shortTtlMs;
    const lapsing = await c.within('tryAcquire answers', holder.tryAcquire(`${base}/short`, { ttlMs, autoRenew: false }));
    const kept = await c.within('tryAcquire answers', holder.tryAcquire(`${base}/kept`));
    expect(lapsing && kept, 'tryAcquire of a free key returned no lock').toBeTruthy();
    expect(keysOf(await c.within('list answers', observer.list({ prefix: base }))), 'list() misses a held lock').toEqual([
      `${base}/kept`,
      `${base}/short`,
    ]);
    const bound = ttlMs + c.timing.graceMs + c.timing.slackMs;
    await c.until(
      'list() stops showing a lock whose lease ran out',
      async () => (await observer.list({ prefix: base })).length === 1,
      bound,
      50,
    );
    expect(keysOf(await c.within('list answers', observer.list({ prefix: base }))), 'list() lost the lock still held').toEqual([
      `${base}/kept`,
    ]);
    await c.within('release answers', kept!.release());
  });

  test('52. list() rejects a bad prefix with a typed error and lists nothing for an unused one', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    for (const bad of [{ prefix: 7 }, { prefix: 'a\u0000b' }, { prefix: 'x', limit: 3 }, 'prefix'] as unknown[]) {
      const failure = await c.within(
        'list answers',
        (locks as LockProvider).list(bad as never).then(
          () => undefined,
          (error: unknown) => error,
        ),
      );
      expect((failure as { code?: string } | undefined)?.code, `list(${JSON.stringify(bad)}) is not an InvalidArgumentError`).toBe(
        ErrorCode.InvalidArgument,
      );
    }
    expect(await c.within('list answers', locks.list({ prefix: c.key('unused') })), 'list() of an unused prefix').toEqual([]);
  });
}
