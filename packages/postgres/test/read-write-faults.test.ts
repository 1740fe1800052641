// A read-write grant is one statement that judges the newest committed row, not what the key looked
// like when the caller asked: a statement held back on the way (a slow network, a paused proxy)
// while another grant comes in must find that grant in its way, whichever mode each one asked for.
import type { LockProvider, ReadWriteLock } from '@holdfast/core';
import { addressOf, FaultProxy, urlAt } from '@holdfast/test-harness/faults';
import { elapsed, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterAll, describe, expect, test } from 'vitest';
import { createPostgresProvider } from '../src/index.js';

const server = await useBackend('postgres');
const STALL_MS = 2000;
const TTL_MS = 1000;
/** A grant that waits for no row lock answers within a round trip or two, far below the stall. */
const AT_ONCE_MS = 500;

type Mode = 'reader' | 'writer';
const grab = (rw: ReadWriteLock, mode: Mode, ttlMs?: number) => (mode === 'writer' ? rw.tryWrite({ ttlMs }) : rw.tryRead({ ttlMs }));

describe.skipIf(!server.url)(`postgres read-write grant held back on the way (${server.label})`, { timeout: 30_000 }, () => {
  const url = server.url!;
  const closers: (() => Promise<unknown>)[] = [];
  afterAll(() => Promise.allSettled(closers.map((close) => close())));

  for (const [late, first] of [
    ['writer', 'reader'],
    ['reader', 'writer'],
  ] as const) {
    test(`a ${late}'s grant statement held back while a ${first} is granted: it then finds the ${first} in its way`, async () => {
      const proxy = await FaultProxy.start(addressOf(url));
      const stalled: LockProvider = createPostgresProvider({ url: urlAt(url, proxy.address), callTimeoutMs: STALL_MS + 2000 });
      const direct = createPostgresProvider({ url });
      closers.push(
        () => stalled.close(),
        () => direct.close(),
        () => proxy.close(),
      );
      // Opens the pool's connection, the LISTEN connection and the tables, so the next chunk is the grant.
      await (await stalled.readWrite(`warm-up/${process.pid}/${Date.now()}/${late}`).tryWrite())!.release();
      const key = `held-${late}/${process.pid}/${Date.now()}`;
      const hold = proxy.holdClientChunk(1, STALL_MS);
      const answer = grab(stalled.readWrite(key), late);
      const held = await within(hold.engaged, 5000, `the ${late}'s statement is held`);
      expect(held.preview, 'the held chunk is the grant statement').toMatch(/WITH fence AS/);

      const granted = await elapsed(() => within(grab(direct.readWrite(key), first, TTL_MS), AT_ONCE_MS * 4, `a ${first}`));
      expect(granted.value, `a ${first} refused while the ${late}'s statement was held back`).not.toBeNull();
      expect(granted.ms, `the ${first} waited for the held statement`).toBeLessThan(AT_ONCE_MS);

      expect(await within(answer, STALL_MS + 3000, `the held ${late} answers`), `a ${late} granted beside a ${first}`).toBeNull();
      const holders = await direct.readWrite(key).holders();
      const mode = first === 'writer' ? 'exclusive' : 'shared';
      expect(holders.map((holder) => [holder.token, holder.details?.['mode']])).toEqual([[granted.value!.token, mode]]);
      expect(granted.value!.signal.aborted, `the ${first} lost its grant during the stall`).toBe(false);
      await granted.value!.release();
    });
  }
});
