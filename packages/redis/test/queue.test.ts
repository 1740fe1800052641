import { type ChildProcess, spawn } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { getEventListeners } from 'node:events';
import { CHANNELS, type LockEvent, type LockProvider } from '@holdfast/core';
import { lostWithin, until, within } from '@holdfast/test-harness/helpers';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { QUEUE_REFRESH_MS } from '../src/queued-waiters.js';
import { QUEUE_ENTRY_TTL_MS } from '../src/single-node-grant.js';
import { BACKGROUND } from '../src/until-aborted.js';
import { providersClosedAfterEach, serverWithAdmin } from './fixture.js';
import { type RedisProcess, startRedisProcess } from './redis-process.js';

// Plain-lock waiters queue on the server (queue-scripts.ts): a release names the next waiter, so
// one release costs one attempt whichever provider waits, and waiters are served in arrival order
// across providers. Each provider below stands for a process of its own.

const { server, admin } = await serverWithAdmin();

const children: ChildProcess[] = [];
// Stopped children holding keys are killed first, so that closing providers does not wait on them.
const { providers, open: openTracked } = providersClosedAfterEach(() => {
  for (const child of children.splice(0)) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
});
/** A provider whose safety re-check is far beyond the tests' bounds: only the queue can pass them. */
const open = (url = server!.url): LockProvider => openTracked({ url, pollIntervalMs: 60_000 });

let keyCount = 0;
const newKey = (): string => `queue/${++keyCount}`;
const queued = (key: string, client = admin!): Promise<number> => client.zcard(`{holdfast:${key}}//queue`);

async function scriptCalls(): Promise<number> {
  const line = (await admin!.info('commandstats')).split('\n').find((entry) => entry.startsWith('cmdstat_evalsha:'));
  return Number(/calls=(\d+)/.exec(line ?? '')?.[1] ?? 0);
}

/** The built adapter, for a waiter in a process of its own. */
const BUILT = new URL('../dist/index.js', import.meta.url).href;

/** A child process that waits for `key` in the queue (and would print HELD when granted). */
function waitingChild(url: string, key: string): ChildProcess {
  const script = `const { createRedisProvider } = await import(${JSON.stringify(BUILT)});
const provider = createRedisProvider({ url: ${JSON.stringify(url)}, pollIntervalMs: 60000 });
await provider.acquire(${JSON.stringify(key)}, { waitMs: 30000, ttlMs: 30000 });
process.stdout.write('HELD\\n');`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return child;
}

describe.skipIf(!server)('server-side queue of waiters', { timeout: 30_000 }, () => {
  test('12 waiters in 12 providers are granted in arrival order, one attempt each per release', async () => {
    const key = newKey();
    const holder = open();
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const order: number[] = [];
    const waiters = 12;
    const granted: Promise<void>[] = [];
    for (let i = 0; i < waiters; i++) {
      granted.push(
        open()
          .acquire(key, { waitMs: 20_000, ttlMs: 60_000 })
          .then((lock) => {
            order.push(i);
            return lock.release();
          }),
      );
      await until(async () => (await queued(key)) === i + 1, 5000, `waiter ${i} is queued`);
    }
    const before = await scriptCalls();
    const releasedAt = performance.now();
    await held!.release();
    await within(Promise.all(granted), 5000, 'every waiter is granted in turn');
    const tookMs = performance.now() - releasedAt;
    expect(order, 'waiters are served in arrival order across providers').toEqual(Array.from({ length: waiters }, (_, i) => i));
    // The holder's release, then per waiter its granted attempt and its release; each waiter also
    // refreshes its place every QUEUE_REFRESH_MS. A herd would add an attempt of every remaining
    // waiter per release (66 more for 12 waiters).
    const refreshes = waiters * Math.ceil(tookMs / QUEUE_REFRESH_MS);
    expect(await scriptCalls(), 'scripts for one release and 12 grants').toBeLessThanOrEqual(before + 1 + 2 * waiters + refreshes);
    // Woken by the releases that name them: waiters woken only by their refreshes would take about
    // half a refresh period per hand-off (11 x 250 ms).
    expect(tookMs, 'each waiter was woken by the release naming it').toBeLessThan(3 * QUEUE_REFRESH_MS);
    expect(await queued(key), 'nothing is left in the queue').toBe(0);
  });

  test('a waiting acquire makes one attempt: a free key is granted without queueing, a taken one queues it and then it waits', async () => {
    const key = newKey();
    const [holder, waiter] = [open(), open()];
    let before = await scriptCalls();
    const first = await holder.acquire(key, { waitMs: 20_000, ttlMs: 60_000 });
    expect(await scriptCalls(), 'one script for a free key').toBe(before + 1);
    expect(await admin!.exists(`{holdfast:${key}}//queue`), 'a free key is granted without a queue').toBe(0);
    // The wait event comes once the waiter's place is on the server, after its one attempt.
    const placeWhenWaiting = new Promise<number>((resolve) => {
      const onWait = (message: unknown): void => {
        if ((message as LockEvent).key !== key) return;
        unsubscribe(CHANNELS.wait, onWait);
        resolve(queued(key));
      };
      subscribe(CHANNELS.wait, onWait);
    });
    before = await scriptCalls();
    const waiting = waiter.acquire(key, { waitMs: 20_000 });
    expect(await within(placeWhenWaiting, 5000, 'the waiter says it waits'), 'queued before it says it waits').toBe(1);
    expect(await scriptCalls(), 'one script queued the waiter').toBe(before + 1);
    await first.release();
    await (await within(waiting, 5000, 'the waiter is granted')).release();
    expect(await queued(key), 'nothing is left in the queue').toBe(0);
  });

  test("a release reaches the named waiter's provider alone: queued waiters hold no pattern subscription", async () => {
    const key = newKey();
    const holder = open();
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const waiters = 8;
    const granted: Promise<void>[] = [];
    for (let i = 0; i < waiters; i++) {
      granted.push(
        open()
          .acquire(key, { waitMs: 20_000 })
          .then((lock) => lock.release()),
      );
      await until(async () => (await queued(key)) === i + 1, 5000, `waiter ${i} is queued`);
    }
    expect(await admin!.pubsub('NUMPAT'), 'no waiter hears every release of the namespace').toBe(0);
    const spy = admin!.duplicate();
    const wakes = new Map<string, number>();
    spy.on('pmessage', (_pattern: string, channel: string) => wakes.set(channel, (wakes.get(channel) ?? 0) + 1));
    try {
      await spy.psubscribe('holdfast:wake:*');
      await held!.release();
      await within(Promise.all(granted), 5000, 'every waiter is granted in turn');
      // The holder's release and each waiter's but the last named the next waiter, on its provider's channel only.
      expect([...wakes.values()], 'one message per hand-off, each to another provider').toEqual(Array.from({ length: waiters }, () => 1));
    } finally {
      spy.disconnect();
    }
  });

  test('a waiter behind the next in line refreshes its place every QUEUE_REFRESH_MS, whatever its pollIntervalMs', async () => {
    const key = newKey();
    const holder = open();
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const next = open().acquire(key, { waitMs: 20_000 });
    await until(async () => (await queued(key)) === 1, 5000, 'the next in line is queued');
    const eager = createRedisProvider({ url: server!.url, pollIntervalMs: 20 });
    providers.push(eager);
    const behind = eager.acquire(key, { waitMs: 20_000 });
    await until(async () => (await queued(key)) === 2, 5000, 'the second waiter is queued');
    const before = await scriptCalls();
    const windowMs = 2 * QUEUE_REFRESH_MS;
    // Nothing to wait for but time: the count over a window is the measure.
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    // Each waiter refreshes at most windowMs / QUEUE_REFRESH_MS + 1 times; polling every 20 ms would be about 50.
    const refreshes = 2 * (windowMs / QUEUE_REFRESH_MS + 1);
    expect(await scriptCalls(), 'only the next in line checks at its pollIntervalMs').toBeLessThanOrEqual(before + refreshes);
    await held!.release();
    await (await within(next, 5000, 'the next in line is granted')).release();
    await (await within(behind, 5000, 'the second waiter is granted')).release();
  });

  test('a release names the next waiter: it is granted at once, not at its next refresh', async () => {
    const key = newKey();
    const [holder, first, second] = [open(), open(), open()];
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const firstDone = first.acquire(key, { waitMs: 20_000 }).then((lock) => lock.release());
    await until(async () => (await queued(key)) === 1, 5000, 'the first waiter is queued');
    const secondGranted = second.acquire(key, { waitMs: 20_000 });
    await until(async () => (await queued(key)) === 2, 5000, 'the second waiter is queued', { everyMs: 5 });
    // The second waiter refreshes QUEUE_REFRESH_MS after it queued: the two hand-offs come well before that.
    const releasedAt = performance.now();
    await held!.release();
    await within(firstDone, 5000, 'the first waiter is granted and releases');
    await (await within(secondGranted, 5000, 'the second waiter is granted')).release();
    expect(performance.now() - releasedAt, 'the second waiter was woken by the release naming it').toBeLessThan(QUEUE_REFRESH_MS / 2);
  });

  test('a newcomer does not jump the queue while the next waiter takes its turn', async () => {
    const key = newKey();
    const [holder, waiter, newcomer] = [open(), open(), open()];
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const waiting = waiter.acquire(key, { waitMs: 20_000 });
    await until(async () => (await queued(key)) === 1, 5000, 'the waiter is queued');
    // The release and the newcomer's attempt are sent together: the key is free, but it is the waiter's turn.
    const [, attempt] = await Promise.all([held!.release(), newcomer.tryAcquire(key)]);
    expect(attempt, 'the newcomer is refused a key that is the waiter`s turn').toBeNull();
    await (await within(waiting, 5000, 'the waiter is granted')).release();
  });

  test('a waiter that aborts frees its place at once: the next is granted without waiting for it to lapse', async () => {
    const key = newKey();
    const [holder, first, second] = [open(), open(), open()];
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const abort = new AbortController();
    const firstWait = first.acquire(key, { waitMs: 20_000, signal: abort.signal }).catch((error: unknown) => error);
    await until(async () => (await queued(key)) === 1, 5000, 'the first waiter is queued');
    const secondWait = second.acquire(key, { waitMs: 20_000 });
    await until(async () => (await queued(key)) === 2, 5000, 'the second waiter is queued');
    abort.abort(new Error('the caller gave up'));
    expect(await within(firstWait, 1000, 'the aborted wait rejects'), 'it rejects with the reason').toMatchObject({
      code: 'HOLDFAST_ABORTED',
    });
    await until(async () => (await queued(key)) === 1, 1000, 'the aborted waiter left the queue');
    const releasedAt = performance.now();
    await held!.release();
    await (await within(secondWait, 5000, 'the second waiter is granted')).release();
    expect(performance.now() - releasedAt, 'granted by the release, not after the aborted entry lapsed').toBeLessThan(
      QUEUE_ENTRY_TTL_MS / 2,
    );
  });

  test('a provider closed while its waiter is next removes the entry before it quits: the next is granted at the release', async () => {
    const key = newKey();
    const [holder, closing, next] = [open(), open(), open()];
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const closedWait = closing.acquire(key, { waitMs: 20_000 }).catch((error: unknown) => error);
    await until(async () => (await queued(key)) === 1, 5000, 'the waiter of the closing provider is queued');
    const nextWait = next.acquire(key, { waitMs: 20_000 });
    await until(async () => (await queued(key)) === 2, 5000, 'the next waiter is queued');
    await closing.close();
    expect(await within(closedWait, 1000, 'the closed wait rejects'), 'it rejects').toMatchObject({ code: 'HOLDFAST_PROVIDER_CLOSED' });
    expect(await queued(key), 'the closed provider left the queue before it quit').toBe(1);
    const releasedAt = performance.now();
    await held!.release();
    await (await within(nextWait, 5000, 'the next waiter is granted')).release();
    expect(performance.now() - releasedAt, 'granted by the release, not after the closed waiter`s entry lapsed').toBeLessThan(
      QUEUE_ENTRY_TTL_MS / 2,
    );
  });

  for (const fault of ['SIGSTOP', 'SIGKILL'] as const) {
    test(`a waiter at the head whose process gets ${fault} delays the next by at most its entry's life`, async () => {
      const key = newKey();
      const [holder, next] = [open(), open()];
      const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
      const child = waitingChild(server!.url, key);
      await until(async () => (await queued(key)) === 1, 10_000, 'the child process is queued');
      const nextWait = next.acquire(key, { waitMs: 20_000 });
      await until(async () => (await queued(key)) === 2, 5000, 'the next waiter is queued');
      child.kill(fault);
      const releasedAt = performance.now();
      await held!.release();
      await (await within(nextWait, 10_000, 'the next waiter is granted')).release();
      const delayMs = performance.now() - releasedAt;
      expect(delayMs, 'bounded by the dead entry`s life and one refresh').toBeLessThan(QUEUE_ENTRY_TTL_MS + QUEUE_REFRESH_MS + 500);
    });
  }

  test('20 waiters aborting at once leave the queue without a listener each on a shared signal (Node warned of a leak)', async () => {
    const key = newKey();
    const [holder, waiting] = [open(), open()];
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const abort = new AbortController();
    const waits = Array.from({ length: 20 }, () => waiting.acquire(key, { waitMs: 20_000, signal: abort.signal }).catch(() => undefined));
    await until(async () => (await queued(key)) === 20, 5000, 'every waiter is queued');
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      if (warning.name === 'MaxListenersExceededWarning') warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    let mostListeners = 0;
    let sampling = true;
    const sample = (): void => {
      mostListeners = Math.max(mostListeners, getEventListeners(BACKGROUND.signal, 'abort').length);
      if (sampling) setImmediate(sample);
    };
    try {
      sample();
      abort.abort(new Error('every caller gave up'));
      await within(Promise.all(waits), 2000, 'every aborted wait rejects');
      await until(async () => (await queued(key)) === 0, 2000, 'every aborted waiter left the queue');
    } finally {
      sampling = false;
      process.off('warning', onWarning);
    }
    expect(mostListeners, 'leaving the queue listened to a signal that never aborts').toBe(0);
    expect(warnings).toEqual([]);
    await held!.release();
  });

  test('a waiter whose deadline passes leaves the queue', async () => {
    const key = newKey();
    const [holder, waiter] = [open(), open()];
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const outcome = waiter.acquire(key, { waitMs: 300 }).catch((error: unknown) => error);
    await until(async () => (await queued(key)) === 1, 5000, 'the waiter is queued');
    expect(await within(outcome, 2000, 'the wait times out'), 'a timeout').toMatchObject({ code: 'HOLDFAST_TIMEOUT' });
    await until(async () => (await queued(key)) === 0, 1000, 'the waiter left the queue');
    await held!.release();
  });
});

describe.skipIf(!server)('a restart of the server forgets the queue', { timeout: 60_000 }, () => {
  let redis: RedisProcess;
  afterAll(async () => redis?.stop());

  test('waiters queue again, the lost holder is told, and every waiter is granted in the end', async () => {
    redis = await startRedisProcess();
    const client = new Redis(redis.url, { lazyConnect: false });
    client.on('error', () => undefined);
    try {
      const key = newKey();
      const holder = open(redis.url);
      const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
      const waiters = [open(redis.url), open(redis.url), open(redis.url)];
      const granted = waiters.map((waiter) => waiter.acquire(key, { waitMs: 30_000 }).then((lock) => lock.release()));
      await until(async () => (await queued(key, client)) === 3, 5000, 'three waiters are queued');
      await redis.restart();
      await lostWithin(held!, 5000, 'the holder hears its grant may be gone');
      await within(Promise.all(granted), 15_000, 'every waiter is granted after the restart');
      expect(await queued(key, client), 'nothing is left in the queue').toBe(0);
    } finally {
      client.disconnect();
    }
  });
});
