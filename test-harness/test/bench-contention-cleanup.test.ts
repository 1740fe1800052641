import { createLockProvider } from '@holdfast/core';
import { expect, test } from 'vitest';
import { contentionTable } from '../src/bench/contention.js';
import { providerClient } from '../src/bench/holdfast.js';
import { parseBenchArgs } from '../src/bench/settings.js';
import type { LockClient, LockSubject } from '../src/bench/types.js';
import { rejection, within } from '../src/helpers/index.js';

const CONTENDERS = 8;
/** The warm-up of this client fails, as one timing out on a saturated server does. */
const FAILING = 2;

/**
 * Memory providers of one store, counted as they are opened and closed. The failing client's warm-up
 * fails at once and the others' take a little longer, so that clients are still being created after
 * the first failure (as on a slow server, where one warm-up times out while others are connecting).
 */
function countedSubject(store: string) {
  let created = 0;
  const open = new Set<LockClient>();
  const subject: LockSubject = {
    subject: 'holdfast memory, counted',
    pollPeriodMs: 0,
    async client() {
      const index = created++;
      const real = providerClient(await createLockProvider(store));
      const client: LockClient = {
        async tryOnce(key) {
          if (index === FAILING) throw new Error('no answer within 5000 ms (a warm-up that timed out)');
          await new Promise(setImmediate);
          return real.tryOnce(key);
        },
        acquire: (key, signal) => real.acquire(key, signal),
        async close() {
          open.delete(client);
          await real.close();
        },
      };
      open.add(client);
      return client;
    },
  };
  return { subject, open, created: () => created };
}

test('a contention cell whose warm-up fails closes every client it opened, those created after the failure too', async () => {
  const counted = countedSubject(`memory://bench-cleanup-${Math.random().toString(36).slice(2, 8)}`);
  const settings = parseBenchArgs(['memory', '--quick', '--contention-ms', '100', '--contenders', String(CONTENDERS), '--keys', '2'], {});
  const error = await within(
    rejection(contentionTable([counted.subject], settings), 'the failing contention cell'),
    10_000,
    'the failing contention cell',
  );
  expect(String(error)).toContain('a warm-up that timed out');
  expect(counted.created()).toBe(CONTENDERS);
  // Left open, each would keep its connections (and a MongoDB provider its pings) on the server for the rest of the run.
  expect(counted.open.size, `${counted.open.size} of ${CONTENDERS} clients left open`).toBe(0);
});
