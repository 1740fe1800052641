// A grant is a few autocommit statements, not a transaction: a client stalled in the middle of one
// (a paused process, a slow network) holds no row lock, so it delays neither the holder's renewals
// nor anyone else's grant. With the statements in one transaction, the stalled client would hold the
// fence row (and, once busy, the holder's row) until it woke up. The same for a semaphore's slots,
// where the stalled take must also never hand out a token below those granted during the stall, and
// of read-write grants, where a stalled take must never add a writer beside readers granted meanwhile
// (or a reader beside a writer).
import { ErrorCode, type Lock, type LockProvider, type ReadWriteLock } from '@holdfast/core';
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

  /**
   * A provider whose next grant (`grab`, after a warm-up that opens its connection and the tables)
   * is held back before its third statement, the take (or its second, the reserve), for STALL_MS;
   * and one that talks directly.
   */
  async function stalledGrant<T>(
    grab: (stalled: LockProvider) => Promise<T>,
    before: 'take' | 'reserve' = 'take',
  ): Promise<{ answer: Promise<T>; direct: LockProvider }> {
    const proxy = await FaultProxy.start(addressOf(url));
    const stalled = createMysqlProvider({ url: urlAt(url, proxy.address), callTimeoutMs: STALL_MS + 2000 });
    const direct = createMysqlProvider({ url });
    closers.push(
      () => stalled.close(),
      () => direct.close(),
      () => proxy.close(),
    );
    await (await stalled.tryAcquire(`warm-up/${process.pid}/${Date.now()}`))!.release();
    const hold = proxy.holdClientChunk(before === 'take' ? 3 : 2, STALL_MS);
    const answer = grab(stalled);
    const held = await within(hold.engaged, 5000, `the grant's ${before} is held`);
    expect(held.preview, `the held statement is the ${before}`).toMatch(
      before === 'take' ? /INSERT INTO `holdfast_locks`/ : /INSERT INTO `holdfast_locks_fences`/,
    );
    return { answer, direct };
  }

  /** A grant made while the other is stalled, at once (no row lock waited for). */
  async function grantedAtOnce(grant: Promise<Lock | null>, what: string): Promise<Lock> {
    const granted = await elapsed(() => within(grant, 1000, what));
    expect(granted.value, `${what}: refused while another grant was stalled`).not.toBeNull();
    expect(granted.ms, `${what}: waited for the stalled grant`).toBeLessThan(500);
    return granted.value!;
  }

  test('a contender stalled before its take blocks nobody: another is granted at once and renews through the stall; the stalled take then writes nothing', async () => {
    const key = `stalled/${process.pid}/${Date.now()}`;
    const { answer, direct } = await stalledGrant((stalled) => stalled.tryAcquire(key));
    const lock = await grantedAtOnce(direct.tryAcquire(key, { ttlMs: TTL_MS }), 'a lock');

    expect(
      await within(answer, STALL_MS + 3000, 'the stalled grant answers'),
      'the stalled grant was granted over a live holder',
    ).toBeNull();
    // The stall outlasted the lease three times over: only renewals that were never blocked kept it.
    expect(lock.signal.aborted, 'the holder lost its lock during the stall').toBe(false);
    expect(await lock.isHeld()).toBe(true);
    expect((await direct.inspect(key))?.token).toBe(lock.token);
    await lock.release();
    expect(lock.signal.reason?.code).toBe(ErrorCode.Released);
  });

  test('a slot grant stalled before its take blocks nobody; its stale reservation takes nothing, and it gets a free slot with a newer token', async () => {
    const key = `stalled-slot/${process.pid}/${Date.now()}`;
    const { answer, direct } = await stalledGrant((stalled) => stalled.semaphore(key, 3).tryAcquire());
    const first = await grantedAtOnce(direct.semaphore(key, 3).tryAcquire({ ttlMs: TTL_MS }), 'a first slot');
    const second = await grantedAtOnce(direct.semaphore(key, 3).tryAcquire({ ttlMs: TTL_MS }), 'a second slot');

    const late = await within(answer, STALL_MS + 3000, 'the stalled slot grant answers');
    // Its first take carried a reservation older than both grants above: writing it would have handed
    // out a token below theirs. It found the third slot free and took it with a new reservation.
    expect(late, 'the stalled grant got no slot although one was free').not.toBeNull();
    expect(late!.token, 'the stalled grant went out with a token below earlier grants').toBeGreaterThan(second.token);
    expect(second.token).toBeGreaterThan(first.token);
    for (const slot of [first, second]) expect(slot.signal.aborted, 'a slot was lost during the stall').toBe(false);
    const holders = await direct.semaphore(key, 3).holders();
    expect(holders.map((holder) => holder.token)).toEqual([first.token, second.token, late!.token]);
    await Promise.all([first.release(), second.release(), late!.release()]);
  });

  // Held before its reserve, the late grant reserves the newest token after the other's take: only
  // the take's judgement of the newest row (a reader is in a writer's way, a writer in a reader's) refuses it.
  for (const [late, first] of [
    ['writer', 'reader'],
    ['reader', 'writer'],
  ] as const) {
    test(`a ${late} that saw the key free, stalled before its reserve while a ${first} is granted: its newest token takes no place beside the ${first}`, async () => {
      const key = `stalled-${late}/${process.pid}/${Date.now()}`;
      const grab = (rw: ReadWriteLock, mode: 'reader' | 'writer', options?: { ttlMs: number }) =>
        mode === 'writer' ? rw.tryWrite(options) : rw.tryRead(options);
      const { answer, direct } = await stalledGrant((stalled) => grab(stalled.readWrite(key), late), 'reserve');
      const granted = await grantedAtOnce(grab(direct.readWrite(key), first, { ttlMs: TTL_MS }), `a ${first}`);

      expect(await within(answer, STALL_MS + 3000, `the stalled ${late} answers`), `a ${late} granted beside a ${first}`).toBeNull();
      const holders = await direct.readWrite(key).holders();
      const mode = first === 'writer' ? 'exclusive' : 'shared';
      expect(holders.map((holder) => [holder.token, holder.details?.['mode']])).toEqual([[granted.token, mode]]);
      expect(granted.signal.aborted, `the ${first} lost its grant during the stall`).toBe(false);
      await granted.release();
    });
  }
});
