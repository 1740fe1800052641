import { ErrorCode, type Lock } from '@holdfast/core';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe, expect, test } from 'vitest';
import { provider, SHORT_TTL_MS } from './fixtures.js';

const mongodb = await useBackend('mongodb');

describe.skipIf(!mongodb.url)(`a plain lock on a semaphore key (${mongodb.label})`, () => {
  const url = mongodb.url!;

  test('is a conflict while a slot holder may be live, and is granted once every holder has lapsed, with a higher token', async () => {
    const holder = provider(url, { owner: 'slot-holder' });
    const locker = provider(url, { owner: 'locker' });
    const key = `lock-on-semaphore/${Date.now().toString(36)}`;
    try {
      const slot = await holder.semaphore(key, 2).tryAcquire({ ttlMs: SHORT_TTL_MS, autoRenew: false });
      expect(slot, 'a free slot was not granted').not.toBeNull();
      const early = await locker.tryAcquire(key).catch((error: unknown) => error);
      expect((early as { code?: string }).code, 'a semaphore key with a live holder was taken as a lock').toBe(ErrorCode.Conflict);
      // The holder neither releases nor extends: its lease runs out, and the locker judges it expired a
      // lease after its first look (a conflict until then, as long as the holder may be live; null once
      // the lapsed holder has been dropped; then the lock).
      const lostAt = await new Promise<number>((resolve) =>
        slot!.signal.addEventListener('abort', () => resolve(Date.now()), { once: true }),
      );
      const giveUpAt = Date.now() + 3 * SHORT_TTL_MS;
      let lock: Lock | null = null;
      while (!lock && Date.now() < giveUpAt) {
        lock = await locker.tryAcquire(key).catch((error: unknown) => {
          if ((error as { code?: string }).code !== ErrorCode.Conflict) throw error;
          return null;
        });
        if (!lock) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(lock, 'the key was never granted as a lock after its only slot holder lapsed').not.toBeNull();
      const grantedAt = Date.now();
      expect(grantedAt, 'the lock was granted before the slot holder was told its lease ran out').toBeGreaterThanOrEqual(lostAt);
      expect(lock!.token > slot!.token, "the lock's token is not above the slot's").toBe(true);
      expect(await holder.semaphore(key, 2).holders(), 'holders() while the key is a plain lock').toEqual([]);
      const asSemaphore = await holder
        .semaphore(key, 2)
        .tryAcquire()
        .catch((error: unknown) => error);
      expect((asSemaphore as { code?: string }).code, 'a held lock was used as a semaphore').toBe(ErrorCode.Conflict);
      await lock!.release();
    } finally {
      await Promise.allSettled([holder.close(), locker.close()]);
    }
  });
});
