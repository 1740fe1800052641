// An acquire that gives up while its take statement is on its way cuts that statement's connection,
// but a statement the server has received (or receives from the network afterwards) still runs:
// the server notices a client is gone only when it next reads from it. The undo core sends must land
// after that statement, or the grant it missed holds the key for a caller who is gone, for a whole
// lease. Here the take is held back in a proxy until well after the acquire was aborted.
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { addressOf, FaultProxy, urlAt } from '@holdfast/test-harness/faults';
import { codeOf, rejection, until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterAll, describe, expect, test } from 'vitest';
import { createMysqlProvider } from '../src/index.js';

const server = await useBackend('mysql');
const STALL_MS = 1500;
/** Far longer than the test: a grant the undo missed would still hold the key at its end. */
const LONG_TTL_MS = 60_000;

describe.skipIf(!server.url)(`mysql: an abandoned take statement (${server.label})`, { timeout: 30_000 }, () => {
  const url = server.url!;
  const closers: (() => Promise<unknown>)[] = [];
  afterAll(() => Promise.allSettled(closers.map((close) => close())));

  test('an acquire aborted while its take is held back on the way: the take that lands later is undone, not left for its lease', async () => {
    const proxy = await FaultProxy.start(addressOf(url));
    const stalled: LockProvider = createMysqlProvider({ url: urlAt(url, proxy.address) });
    const direct = createMysqlProvider({ url });
    closers.push(
      () => stalled.close(),
      () => direct.close(),
      () => proxy.close(),
    );
    // Opens the pool's connection and the tables, so that the grant's third statement is its take.
    await (await stalled.tryAcquire(`warm-up/${process.pid}/${Date.now()}`))!.release();
    const key = `abandoned/${process.pid}/${Date.now()}`;
    const hold = proxy.holdClientChunk(3, STALL_MS);
    const controller = new AbortController();
    const gaveUp = rejection(stalled.acquire(key, { ttlMs: LONG_TTL_MS, waitMs: 10_000, signal: controller.signal }));
    const held = await within(hold.engaged, 5000, "the grant's take is held");
    expect(held.preview, 'the held statement is the take').toMatch(/INSERT INTO `holdfast_locks`/);
    controller.abort(new Error('the caller moved on'));
    const error = await within(gaveUp, 3000, 'the aborted acquire answers');
    expect(codeOf(error), 'the aborted acquire did not fail with LockAbortedError').toBe(ErrorCode.Aborted);

    // The take reaches the server once the hold ends; the server closes that connection after running it.
    await within(proxy.upstreamClosed(held.connection), STALL_MS + 3000, 'the server ran the held take and closed its connection');
    await until(
      async () => (await direct.inspect(key)) === null,
      3000,
      `the key is free: the take of the aborted acquire landed after its undo and holds the key for its ${LONG_TTL_MS} ms lease`,
      { everyMs: 50 },
    );
    const next = await direct.tryAcquire(key);
    expect(next, 'the key is not free for the next caller').not.toBeNull();
    await next!.release();
  });
});
