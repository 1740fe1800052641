import { channel } from 'node:diagnostics_channel';
import type { LockProvider } from '@holdfast/core';
import { until, within } from '@holdfast/test-harness/helpers';
import { describe, expect, test } from 'vitest';
import { QUEUE_REFRESH_MS } from '../src/queued-waiters.js';
import { providersClosedAfterEach, serverWithAdmin } from './fixture.js';

// A release frees a key for one contender: it must wake one waiter of a provider, not all of them
// (a thundering herd made a grant cost ~60 scripts with 64 waiters). Counted on a private server:
// every grant attempt and every release is one EVALSHA.

const { server, admin } = await serverWithAdmin();

const tracked = providersClosedAfterEach();
/** A provider whose safety re-check is far beyond the tests' bounds: only wake-ups can pass them. */
const open = (): LockProvider => tracked.open({ url: server!.url, pollIntervalMs: 60_000 });

let keyCount = 0;
const newKey = (): string => `wake-one/${++keyCount}`;

/** Waiters in the key's server-side queue (queue-scripts.ts): each is there once its first queued attempt ran. */
const queued = (key: string): Promise<number> => admin!.zcard(`{holdfast:${key}}//queue`);

/** Each queued waiter refreshes its place every QUEUE_REFRESH_MS: the most such attempts `waiters` can make in `ms`. */
const refreshes = (waiters: number, ms: number): number => waiters * Math.ceil(ms / QUEUE_REFRESH_MS);

async function scriptCalls(): Promise<number> {
  const line = (await admin!.info('commandstats')).split('\n').find((entry) => entry.startsWith('cmdstat_evalsha:'));
  return Number(/calls=(\d+)/.exec(line ?? '')?.[1] ?? 0);
}

/** Counts the waits that began (core announces each acquire that starts waiting, as it starts). */
function countWaits(): { readonly count: () => number; stop(): void } {
  let waits = 0;
  const onWait = (): void => {
    waits++;
  };
  const waitChannel = channel('holdfast:wait');
  waitChannel.subscribe(onWait);
  return { count: () => waits, stop: () => waitChannel.unsubscribe(onWait) };
}

/** Pub/sub connections (a provider's wake channel or its patterns: each provider that has waited has one per server). */
async function subscribers(): Promise<number> {
  const clients = (await admin!.client('LIST')) as string;
  return clients.split('\n').filter((line) => / p?sub=[1-9]/.test(line)).length;
}

/** Opens the provider's subscription for good: one wait that a release ends. */
async function subscribed(waiter: LockProvider, holder: LockProvider): Promise<void> {
  const key = newKey();
  const held = await holder.tryAcquire(key);
  const before = await subscribers();
  const waiting = waiter.acquire(key, { waitMs: 10_000 });
  await until(async () => (await subscribers()) > before, 5000, 'the waiter subscribes');
  await held!.release();
  await (await within(waiting, 5000, 'the warm-up wait ends')).release();
}

describe.skipIf(!server)('one release wakes one waiter of a provider', { timeout: 30_000 }, () => {
  test('16 waiters of one provider are granted one after another with one attempt each, no herd', async () => {
    const [holder, waiter] = [open(), open()];
    await subscribed(waiter, holder);
    const key = newKey();
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const waits = countWaits();
    const order: number[] = [];
    const waiters = 16;
    let granted: Promise<void>[];
    try {
      granted = Array.from({ length: waiters }, (_, i) =>
        waiter.acquire(key, { waitMs: 20_000, ttlMs: 60_000 }).then((lock) => {
          order.push(i);
          return lock.release();
        }),
      );
      await until(
        () => waits.count() === waiters,
        5000,
        () => `every waiter waits (${waits.count()} of ${waiters})`,
      );
    } finally {
      waits.stop();
    }
    await until(async () => (await queued(key)) === waiters, 5000, 'every waiter is queued');
    const before = await scriptCalls();
    const releasedAt = performance.now();
    await held!.release();
    await within(Promise.all(granted), 5000, 'every waiter is granted in turn');
    const tookMs = performance.now() - releasedAt;
    // The holder's release, then per waiter one (granted) attempt and its release, and the waiters'
    // refreshes of their places; a herd would add an attempt of every remaining waiter per release
    // (136 more for 16 waiters).
    expect(await scriptCalls(), 'scripts run for one release and 16 grants').toBeLessThanOrEqual(
      before + 1 + 2 * waiters + refreshes(waiters, tookMs),
    );
    expect(order, 'local waiters are woken in arrival order').toEqual(Array.from({ length: waiters }, (_, i) => i));
    expect(tookMs, 'the waiters were woken by releases, not by the 60 s re-check').toBeLessThan(3000);
  });

  test('with keyspace notifications on, a release (a DEL notification and a message) still wakes one waiter', async () => {
    await admin!.config('SET', 'notify-keyspace-events', 'Kg');
    try {
      const [holder, waiter] = [open(), open()];
      await subscribed(waiter, holder);
      const key = newKey();
      const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
      const waits = countWaits();
      const waiters = 8;
      let granted: Promise<void>[];
      try {
        granted = Array.from({ length: waiters }, () => waiter.acquire(key, { waitMs: 20_000 }).then((lock) => lock.release()));
        await until(
          () => waits.count() === waiters,
          5000,
          () => `every waiter waits (${waits.count()} of ${waiters})`,
        );
      } finally {
        waits.stop();
      }
      await until(async () => (await queued(key)) === waiters, 5000, 'every waiter is queued');
      const before = await scriptCalls();
      const releasedAt = performance.now();
      await held!.release();
      await within(Promise.all(granted), 5000, 'every waiter is granted in turn');
      expect(await scriptCalls(), 'scripts run for one release and 8 grants').toBeLessThanOrEqual(
        before + 1 + 2 * waiters + refreshes(waiters, performance.now() - releasedAt),
      );
    } finally {
      await admin!.config('SET', 'notify-keyspace-events', '');
    }
  });

  test('a woken waiter that loses the race waits again, first in line: the next release wakes it, then the next', async () => {
    const [foreign, waiter] = [admin!, open()];
    await subscribed(waiter, open());
    const key = newKey();
    const lockKey = `holdfast:${key}`;
    const channelName = `holdfast:released@0:${lockKey}`;
    expect(await foreign.set(lockKey, 'a foreign holder', 'PX', 30_000, 'NX')).toBe('OK');
    const waits = countWaits();
    const order: string[] = [];
    let first: Promise<void>;
    let second: Promise<void>;
    try {
      first = waiter.acquire(key, { waitMs: 20_000 }).then((lock) => {
        order.push('first');
        return lock.release();
      });
      await until(() => waits.count() === 1, 5000, 'the first waiter waits');
      second = waiter.acquire(key, { waitMs: 20_000 }).then((lock) => {
        order.push('second');
        return lock.release();
      });
      await until(() => waits.count() === 2, 5000, 'the second waiter waits');
    } finally {
      waits.stop();
    }
    await until(async () => (await queued(key)) === 2, 5000, 'both waiters are queued');
    // A release that someone else wins at once: the key is taken again before any waiter can try.
    const startedAt = performance.now();
    const before = await scriptCalls();
    await foreign.eval(
      "redis.call('set', KEYS[1], 'another foreign holder', 'PX', 30000) redis.call('publish', ARGV[1], 'released')",
      1,
      lockKey,
      channelName,
    );
    await until(async () => (await scriptCalls()) > before, 3000, 'the woken waiter tries');
    const releasedAt = performance.now();
    await foreign.eval("redis.call('del', KEYS[1]) redis.call('publish', ARGV[1], 'released')", 1, lockKey, channelName);
    await within(Promise.all([first!, second!]), 5000, 'both waiters are granted');
    // One attempt that lost (the woken waiter's; nobody else was woken), then per waiter a grant and
    // its release, and the waiters' refreshes of their places.
    expect(await scriptCalls(), 'scripts run for a lost release and two grants').toBeLessThanOrEqual(
      before + 1 + 2 * 2 + refreshes(2, performance.now() - startedAt),
    );
    expect(order, 'the waiter that lost the race is served first').toEqual(['first', 'second']);
    expect(performance.now() - releasedAt, 'the waiters were woken by releases, not by the 60 s re-check').toBeLessThan(3000);
  });
});
