import { ErrorCode, type Lock } from '@holdfast/core';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe, expect, test } from 'vitest';
import { provider, SHORT_TTL_MS } from './fixtures.js';

const mongodb = await useBackend('mongodb');

/** The error code an attempt failed with, or 'granted' / 'busy'. */
async function answerOf(attempt: () => Promise<Lock | null>): Promise<string> {
  try {
    const lock = await attempt();
    if (!lock) return 'busy';
    await lock.release();
    return 'granted';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

function lostWithin(lock: Lock, ms: number): Promise<boolean> {
  if (lock.signal.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    lock.signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve(true);
      },
      { once: true },
    );
  });
}

describe.skipIf(!mongodb.url)(`read-write locks on the version records (${mongodb.label})`, () => {
  const url = mongodb.url!;

  test.each(['shared', 'exclusive'] as const)(
    'a key held %s refuses a plain lock and a semaphore on every instance, and is no plain lock to inspect() and list()',
    async (mode) => {
      const holder = provider(url, { owner: 'rw-holder' });
      const other = provider(url, { owner: 'other' });
      const prefix = `rw-other-uses/${mode}/${Date.now().toString(36)}/`;
      const key = `${prefix}key`;
      try {
        const rw = holder.readWrite(key);
        const grant = mode === 'shared' ? await rw.tryRead() : await rw.tryWrite();
        expect(grant, 'a free key refused a read-write grant').not.toBeNull();
        for (const locks of [holder, other]) {
          expect(await answerOf(() => locks.tryAcquire(key)), 'a plain lock of a key in read-write use').toBe(ErrorCode.Conflict);
          expect(await answerOf(() => locks.semaphore(key, 2).tryAcquire()), 'a semaphore slot of a key in read-write use').toBe(
            ErrorCode.Conflict,
          );
          expect(await locks.inspect(key), 'inspect() shows plain locks only').toBeNull();
          expect(await locks.list({ prefix }), 'list() shows plain locks only').toEqual([]);
          expect(await locks.semaphore(key, 2).holders(), "a read-write lock's holders are no semaphore's").toEqual([]);
        }
        const holders = await other.readWrite(key).holders();
        expect(holders.map((info) => [info.owner, info.details?.['mode'], info.token])).toEqual([['rw-holder', mode, grant!.token]]);
        await grant!.release();
        const plain = await other.tryAcquire(key);
        expect(plain, 'a plain lock of a key whose read-write grants were released').not.toBeNull();
        expect(plain!.token > grant!.token, "the plain lock's token is not above the read-write grant's").toBe(true);
        await plain!.release();
      } finally {
        await Promise.allSettled([holder.close(), other.close()]);
      }
    },
  );

  test("a semaphore's holders are no read-write lock's, and a semaphore key refuses both modes", async () => {
    const locks = provider(url, { owner: 'slot-holder' });
    const key = `rw-on-semaphore/${Date.now().toString(36)}`;
    try {
      const slot = await locks.semaphore(key, 2).tryAcquire();
      expect(slot, 'a free slot was not granted').not.toBeNull();
      expect(await locks.readWrite(key).holders()).toEqual([]);
      expect(await answerOf(() => locks.readWrite(key).tryRead())).toBe(ErrorCode.Conflict);
      expect(await answerOf(() => locks.readWrite(key).tryWrite())).toBe(ErrorCode.Conflict);
      await slot!.release();
    } finally {
      await locks.close();
    }
  });

  test.each([
    ['writer', 'reader'],
    ['reader', 'writer'],
  ] as const)('a %s whose lease ran out is dropped for a %s, judged on the server clock, with a higher token', async (lapsed, next) => {
    const gone = provider(url, { owner: 'lapsed' });
    const comer = provider(url, { owner: 'comer' });
    const key = `rw-lapse/${lapsed}-${next}/${Date.now().toString(36)}`;
    try {
      const options = { ttlMs: SHORT_TTL_MS, autoRenew: false };
      const old = lapsed === 'reader' ? await gone.readWrite(key).tryRead(options) : await gone.readWrite(key).tryWrite(options);
      expect(old, 'a free key refused a read-write grant').not.toBeNull();
      const attempt = () => (next === 'reader' ? comer.readWrite(key).tryRead() : comer.readWrite(key).tryWrite());
      expect(await attempt(), `a ${next} granted beside a live ${lapsed}`).toBeNull();
      // The holder neither releases nor extends: its lease runs out; the comer then needs two
      // observations a lease apart on the server's clock before it drops it.
      await new Promise((resolve) => old!.signal.addEventListener('abort', resolve, { once: true }));
      const giveUpAt = Date.now() + 3 * SHORT_TTL_MS;
      let taken: Lock | null = null;
      while (!taken && Date.now() < giveUpAt) {
        taken = await attempt();
        if (!taken) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(taken, `no ${next} granted after the ${lapsed} lapsed`).not.toBeNull();
      expect(taken!.token > old!.token, 'the token did not rise').toBe(true);
      const holders = await comer.readWrite(key).holders();
      expect(
        holders.map((info) => info.owner),
        'the lapsed holder is still listed',
      ).toEqual(['comer']);
      await taken!.release();
    } finally {
      await Promise.allSettled([gone.close(), comer.close()]);
    }
  });

  test('forceRelease frees every reader, and each holder, on its instance or another, is told', async () => {
    const a = provider(url, { owner: 'reader-a' });
    const b = provider(url, { owner: 'reader-b' });
    const key = `rw-force/${Date.now().toString(36)}`;
    try {
      const readerA = await a.readWrite(key).tryRead();
      const readerB = await b.readWrite(key).tryRead();
      expect(readerA && readerB, 'two readers of a free key were not both granted').toBeTruthy();
      expect(await b.forceRelease(key), 'forceRelease found nothing to free').toBe(true);
      expect(await b.readWrite(key).holders()).toEqual([]);
      // b's own reader at once; a's at its holder check (every 250 ms here).
      expect(await lostWithin(readerB!, 100), "the force-releasing instance's reader was not told").toBe(true);
      expect(await lostWithin(readerA!, 2_000), "another instance's reader was not told").toBe(true);
      const writer = await a.readWrite(key).tryWrite();
      expect(writer, 'a writer was refused after every reader was force-released').not.toBeNull();
      expect(writer!.token > readerB!.token, 'the token did not rise').toBe(true);
      await writer!.release();
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
    }
  });
});
