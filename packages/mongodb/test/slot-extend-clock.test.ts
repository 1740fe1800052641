import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe, expect, test } from 'vitest';
import { readServerStatus, type ServerInfo } from '../src/server-info.js';
import { providerWithBackend } from './fixtures.js';

const mongodb = await useBackend('mongodb');

/** The server's clock an hour ahead of this process's: what holders() judges with. */
const SKEW_MS = 3_600_000;
const LEASE_MS = 60_000;

describe.skipIf(!mongodb.url)(`a semaphore slot's extend on the server's clock (${mongodb.label})`, () => {
  test("an extended slot is listed by holders() however far this process's clock is from the server's", async () => {
    const { locks } = providerWithBackend(
      mongodb.url!,
      { owner: 'skewed' },
      {
        readServerInfo: async (db, signal): Promise<ServerInfo> => {
          const real = await readServerStatus(db, signal);
          return { ...real, serverTime: new Date(real.serverTime.getTime() + SKEW_MS) };
        },
      },
    );
    const semaphore = locks.semaphore(`slot-extend-clock/${Date.now().toString(36)}`, 2);
    try {
      const slot = await semaphore.tryAcquire({ ttlMs: LEASE_MS, autoRenew: false });
      expect(slot, 'a free slot was not granted').not.toBeNull();
      const extendedAt = Date.now();
      await slot!.extend(LEASE_MS);
      const holders = await semaphore.holders();
      expect(
        holders.map((holder) => holder.owner),
        'the extended holder was judged expired',
      ).toEqual(['skewed']);
      // A lease from the extend on the server's clock (this machine's, plus the skew), not on this process's.
      const expiresIn = holders[0]!.expiresAt!.getTime() - (extendedAt + SKEW_MS);
      expect(expiresIn).toBeGreaterThan(LEASE_MS - 5000);
      expect(expiresIn).toBeLessThan(LEASE_MS + 5000);
      await slot!.release();
    } finally {
      await locks.close();
    }
  });
});
