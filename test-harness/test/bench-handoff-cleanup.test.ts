import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createLockProvider } from '@holdfast/core';
import { describe, expect, test } from 'vitest';
import { crossProcessPair } from '../src/bench/cross-process.js';
import { inProcessPair } from '../src/bench/handoff.js';
import { providerClient } from '../src/bench/holdfast.js';
import { openAll } from '../src/bench/open-all.js';
import type { LockClient, LockSubject } from '../src/bench/types.js';
import { rejection, until, within } from '../src/helpers/index.js';

const FAILURE = 'no answer within 5000 ms (a client that timed out connecting)';

/** Memory providers of one store, counted as they are opened and closed; the client numbered `failing` fails to open. */
function countedSubject(failing: number) {
  const store = `memory://bench-handoff-${Math.random().toString(36).slice(2, 8)}`;
  let created = 0;
  const open = new Set<LockClient>();
  const subject: LockSubject = {
    subject: 'holdfast memory, counted',
    pollPeriodMs: 0,
    async client() {
      if (created++ === failing) throw new Error(FAILURE);
      const real = providerClient(await createLockProvider(store));
      const client: LockClient = {
        tryOnce: (key) => real.tryOnce(key),
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
  return { subject, open };
}

/** The processes whose command line contains `text` (the holder child gets its URL as an argument). */
function processesNaming(text: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

test('a hand-off pair whose waiter fails to open closes its holder', async () => {
  const counted = countedSubject(1);
  const error = await within(rejection(inProcessPair(counted.subject), 'inProcessPair'), 10_000, 'inProcessPair');
  expect(String(error)).toContain(FAILURE);
  expect(counted.open.size, 'clients left open').toBe(0);
});

test('pairs opened together: when one fails, the others are closed', async () => {
  const counted = countedSubject(Number.POSITIVE_INFINITY);
  const first = inProcessPair(counted.subject);
  // Fails once the first pair is open, as the cross-process pair opened after the in-process one did.
  const failing = async () => first.then(() => Promise.reject(new Error(FAILURE)));
  const error = await within(rejection(openAll([() => first, failing]), 'openAll'), 10_000, 'openAll');
  expect(String(error)).toContain(FAILURE);
  expect(counted.open.size, 'clients left open').toBe(0);
});

describe.skipIf(!existsSync('/proc/self/cmdline'))('the cross-process pair (processes found through /proc)', () => {
  test('a cross-process pair whose waiter fails to open stops its holder process', async () => {
    const url = `memory://bench-handoff-child-${Math.random().toString(36).slice(2, 8)}`;
    const waiter: LockSubject = { subject: 'a waiter that fails', pollPeriodMs: 0, client: async () => Promise.reject(new Error(FAILURE)) };
    try {
      const error = await within(rejection(crossProcessPair(url, waiter), 'crossProcessPair'), 30_000, 'crossProcessPair');
      expect(String(error)).toContain(FAILURE);
      // Stopped by the time crossProcessPair rejects; left running, it would hold its connections for the rest of the run.
      expect(processesNaming(url), 'holder processes left running').toEqual([]);
    } finally {
      for (const pid of processesNaming(url)) process.kill(pid, 'SIGKILL');
      await until(
        () => processesNaming(url).length === 0,
        5_000,
        () => 'leaked holder processes killed',
      );
    }
  });
});
