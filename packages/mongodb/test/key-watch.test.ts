import { until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import type { CommandStartedEvent } from 'mongodb';
import { MongoClient } from 'mongodb';
import { describe, expect, test } from 'vitest';
import { provider } from './fixtures.js';

const mongodb = await useBackend('mongodb');

/** Far longer than any bound below: a waiter that only polled would wait this long. */
const POLL_INTERVAL_MS = 10_000;

/** A read of one lock document by `_id`: what the watch sends, and each attempt once (the pinger filters otherwise). */
function isWatchRead(event: CommandStartedEvent, key: string): boolean {
  const filter = event.command['filter'] as { _id?: unknown } | undefined;
  return event.commandName === 'find' && event.command['find'] === 'locks' && JSON.stringify(filter?._id ?? null).includes(key);
}

describe.skipIf(!mongodb.url)(`waiters are woken by a change of the key, not by the poll (${mongodb.label})`, () => {
  const url = mongodb.url!;

  test('a release hands the lock to a waiter long before the poll interval; nothing is read once nobody waits', async () => {
    const client = new MongoClient(url, { monitorCommands: true });
    const reads: number[] = [];
    const key = `watch/${Date.now().toString(36)}`;
    client.on('commandStarted', (event) => {
      if (isWatchRead(event, key)) reads.push(performance.now());
    });
    const holder = provider(url, { owner: 'holder' });
    const waiter = provider(url, { owner: 'waiter', client, pollIntervalMs: POLL_INTERVAL_MS });
    try {
      const held = await holder.tryAcquire(key);
      expect(held).not.toBeNull();
      const waiting = waiter.acquire(key, { waitMs: 2 * POLL_INTERVAL_MS });
      await until(() => reads.length > 0, 5_000, 'the waiter watches the key');
      const releasedAt = performance.now();
      await held!.release();
      const lock = await within(waiting, POLL_INTERVAL_MS + 5_000, 'the waiter is granted the lock');
      const handOffMs = performance.now() - releasedAt;
      console.info(`[key watch] hand-off in ${Math.round(handOffMs)} ms with a ${POLL_INTERVAL_MS} ms poll interval`);
      expect(handOffMs, 'the waiter was not woken by the release').toBeLessThan(1_000);
      await lock.release();
      // Once nobody waits the watch lets go of the key (after a second's grace) and reads nothing more.
      const lastRead = () => reads[reads.length - 1]!;
      await until(() => performance.now() - lastRead() > 500, 3_000, 'the watch stopped reading the key');
      const count = reads.length;
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(reads.length, 'the watch still reads a key nobody waits for').toBe(count);
    } finally {
      await Promise.allSettled([holder.close(), waiter.close()]);
      await client.close();
    }
  });
});
