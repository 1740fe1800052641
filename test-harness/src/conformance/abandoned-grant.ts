import { ErrorCode } from '@holdfast/core';
import { expect, test } from 'vitest';
import { codeOf, rejection, within } from '../helpers/index.js';
import { faultSetup } from './faults.js';
import type { CaseFactory } from './suite-types.js';

const STALL_MS = 2000;
/** Far past the case: a late grant that nobody undid would still hold the key when the case ends. */
const LATE_GRANT_TTL_MS = 60_000;

/**
 * An acquire given up (its signal) while its grant request is on the way: the request still reaches
 * the server and may grant there, after the caller heard "aborted". Whatever the adapter does with
 * the connection (cut it, cancel the call, or leave it), that grant must be undone once it landed,
 * so that the key is free again within a round trip, not held for a lease by a caller who is gone:
 * a resigned candidate, a cancelled job. (Found by case 76 on PostgreSQL, where the undo, sent at
 * once on another connection, ran before the grant statement it was meant to undo.)
 */
export function abandonedGrantCases(cases: CaseFactory): void {
  test.concurrent('F8. an acquire aborted while its grant is held back on the way: the grant that lands later is undone, the key is free again within a round trip, not a lease', async (t) => {
    const c = cases(t);
    const setup = faultSetup(c, t);
    if (!setup) return;
    const slack = c.timing.slackMs;
    const proxy = await setup.rig.proxy();
    // Its calls outlive the stall: the abort, not a call timeout, is what gives the acquire up.
    const a = await setup.rig.providerAt(proxy.address, { callTimeoutMs: STALL_MS + 2 * slack, closeTimeoutMs: 2000 });
    const observer = await c.provider();
    const warm = await within(a.tryAcquire(c.key('warm-up')), STALL_MS + 2 * slack, 'a warm-up grant through the proxy');
    expect(warm, 'a free key must be granted through the proxy').not.toBeNull();
    await within(warm!.release(), STALL_MS + 2 * slack, 'release of the warm-up grant');

    const key = c.key('abandoned');
    const hold = proxy.holdClientChunk(1, STALL_MS);
    const controller = new AbortController();
    const gaveUp = rejection(a.acquire(key, { ttlMs: LATE_GRANT_TTL_MS, waitMs: 4 * STALL_MS, signal: controller.signal }));
    const held = await within(hold.engaged, STALL_MS + 2 * slack, "the acquire's first write is held");
    console.log(`[conformance] ${c.target.name}: acquire's first write held for ${STALL_MS} ms: ${held.bytes} bytes "${held.preview}"`);
    const abortedAt = performance.now();
    controller.abort(new Error('the caller moved on'));
    const error = await within(gaveUp, slack * 3, 'the aborted acquire answers');
    expect(codeOf(error), 'an acquire aborted while its request was on the way did not fail with LockAbortedError').toBe(ErrorCode.Aborted);
    expect(performance.now() - abortedAt, 'the aborted acquire waited for its request to arrive').toBeLessThan(slack);

    await within(hold.released, STALL_MS + slack, 'the held write goes on to the server');
    // The late grant has left the proxy: it lands within a round trip, on a connection the adapter
    // cut (the server closes it once it ran what reached it) or one it kept (what follows comes after).
    // Seeing it held, or that connection closed, or neither within slack, all lead to the same check.
    const landed = c.until('the late grant is seen held', async () => (await observer.inspect(key)) !== null, slack).catch(() => undefined);
    await within(Promise.race([landed, proxy.upstreamClosed(held.connection)]), slack * 3, 'the late grant lands');
    await c.until(
      `the key is free again after the late grant landed (not held for its ${LATE_GRANT_TTL_MS} ms lease by an acquire that gave up)`,
      async () => (await observer.inspect(key)) === null,
      c.timing.callMs,
    );
    const next = await within(observer.tryAcquire(key), c.timing.callMs, 'tryAcquire of the freed key');
    expect(next, 'the key an aborted acquire left is not free for the next caller').not.toBeNull();
    await within(next!.release(), c.timing.callMs, 'release');
  });
}
