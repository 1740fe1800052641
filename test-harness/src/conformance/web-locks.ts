import { ErrorCode, LockManager } from '@holdfast/core';
import { expect, test } from 'vitest';
import { abortedWithin, codeOf, rejection } from '../helpers/index.js';
import type { CaseFactory } from './suite-types.js';

export function webLockCases(cases: CaseFactory): void {
  test.concurrent('87. the Web Locks layer across instances: ifAvailable, steal, signal and query()', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    // A short lease, so that a backend that tells a robbed holder at its next renewal (a third of it) does so soon.
    const ttlMs = Math.max(c.timing.shortTtlMs, 2 * c.timing.slackMs);
    // One origin for both managers, of this case only: query() then lists this case's locks, not every case's.
    const origin = `${c.key('origin')}/`;
    const [managerA, managerB] = [new LockManager(a, { ttlMs, origin }), new LockManager(b, { ttlMs, origin })];
    const name = 'web';
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let heldSignal: AbortSignal | undefined;
    const holder = managerA.request(name, async (lock) => {
      heldSignal = lock!.signal;
      entered();
      // Holds until its lock is stolen: the request then settles with the loss.
      await new Promise(() => undefined);
    });
    holder.catch(() => undefined);
    await c.within('the first request holds', inside);
    expect(
      await c.within(
        'ifAvailable answers',
        managerB.request(name, { ifAvailable: true }, (lock) => lock),
      ),
      'ifAvailable of a held name',
    ).toBeNull();

    const cancel = new AbortController();
    const waiting = managerB.request(name, { signal: cancel.signal }, () => 'granted');
    // Rejects on every path: below by the abort, or by the providers' close when a step fails first.
    waiting.catch(() => undefined);
    await c.until('query() shows the waiting request', async () => (await managerB.query()).pending.length === 1, c.timing.callMs);
    const seen = await c.within('query answers', managerA.query());
    expect(
      seen.held.map((info) => [info.name, info.mode, info.clientId]),
      "query() lists the origin's held lock by its name, not by the backend key",
    ).toEqual([[name, 'exclusive', a.owner]]);
    const why = new Error('the user left');
    cancel.abort(why);
    expect(await c.within('an aborted request settles', rejection(waiting)), 'an aborted request rejects with the reason').toBe(why);

    const stealWithin = c.timing.graceMs + c.timing.slackMs + c.timing.promptWakeMs;
    const stolen = await c.within(
      'a steal is granted',
      managerB.request(name, { steal: true }, (lock) => lock!.token),
      stealWithin,
    );
    expect(typeof stolen, 'a stealing request got no lock').toBe('bigint');
    // The old holder learns of the forced release when the backend tells it (at once, or at its next renewal).
    const toldWithin = ttlMs + c.timing.graceMs + c.timing.slackMs;
    expect(codeOf(await abortedWithin(heldSignal!, toldWithin, 'the robbed holder is told')), "the robbed holder's signal").toBe(
      ErrorCode.Lost,
    );
    expect(
      codeOf(await c.within("the robbed holder's request settles", rejection(holder), toldWithin)),
      "the robbed holder's request",
    ).toBe(ErrorCode.Lost);
    expect((await c.within('query answers', managerB.query())).pending, 'query() after every request settled').toEqual([]);
  });
}
