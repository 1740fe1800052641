// A grant is a few autocommit statements, not a transaction: a client stalled in the middle of one
// (a paused process, a slow network) holds no row lock, so it delays neither the holder's renewals
// nor anyone else's grant. With the statements in one transaction, the stalled client would hold the
// fence row (and, once busy, the holder's row) until it woke up.
import { ErrorCode, type Lock } from '@holdfast/core';
import { addressOf, FaultProxy, urlAt } from '@holdfast/test-harness/faults';
import { elapsed, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterAll, describe, expect, test } from 'vitest';
import { createMysqlProvider } from '../src/index.js';

const server = await useBackend('mysql');
const STALL_MS = 3000;
const TTL_MS = 1000;

describe.skipIf(!server.url)(`mysql grant stalled between its statements (${server.label})`, { timeout: 30_000 }, () => {
  const url = server.url!;
  const closers: (() => Promise<unknown>)[] = [];
  afterAll(() => Promise.allSettled(closers.map((close) => close())));

  test('a contender stalled before its take blocks nobody: another is granted at once and renews through the stall; the stalled take then writes nothing', async () => {
    const proxy = await FaultProxy.start(addressOf(url));
    const stalled = createMysqlProvider({ url: urlAt(url, proxy.address), callTimeoutMs: STALL_MS + 2000 });
    const direct = createMysqlProvider({ url });
    closers.push(
      () => stalled.close(),
      () => direct.close(),
      () => proxy.close(),
    );
    const key = `stalled/${process.pid}/${Date.now()}`;
    // A warm-up opens the proxied connection and creates the tables: the grant below sends 3 statements.
    await (await stalled.tryAcquire(`${key}-warm-up`))!.release();

    const hold = proxy.holdClientChunk(3, STALL_MS);
    const grab = stalled.tryAcquire(key);
    const held = await within(hold.engaged, 5000, 'the third statement of the grant is held');
    expect(held.preview, 'the held statement is the take').toMatch(/INSERT INTO `holdfast_locks`/);

    const granted = await elapsed(() => within(direct.tryAcquire(key, { ttlMs: TTL_MS }), 1000, 'a grant while the other is stalled'));
    expect(granted.value, 'a free key was refused while another grant was stalled').not.toBeNull();
    expect(granted.ms, 'a grant waited for the stalled one').toBeLessThan(500);
    const lock: Lock = granted.value!;

    const stalledAnswer = await within(grab, STALL_MS + 3000, 'the stalled grant answers once its statement is passed on');
    expect(stalledAnswer, 'the stalled grant was granted over a live holder').toBeNull();
    // The stall outlasted the lease three times over: only renewals that were never blocked kept it.
    expect(lock.signal.aborted, 'the holder lost its lock during the stall').toBe(false);
    expect(await lock.isHeld()).toBe(true);
    const info = await direct.inspect(key);
    expect(info?.token).toBe(lock.token);
    await lock.release();
    expect(lock.signal.reason?.code).toBe(ErrorCode.Released);
  });
});
