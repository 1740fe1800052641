import { expect, test, vi } from 'vitest';
import { createProvider } from '../src/backend-index.js';
import { BackendError, LockAbortedError, LockTimeoutError } from '../src/index.js';
import { advanceTo, outcomeOf, useFakeClock } from './fixtures/fake-clock.js';
import { QueuedBackend } from './fixtures/queued-backend.js';

useFakeClock();

/** A FIFO backend whose key "k" another process holds. */
function setup() {
  const backend = new QueuedBackend();
  backend.holders.set('k', 'another-process');
  const provider = createProvider(backend, { pollIntervalMs: 100, callTimeoutMs: 5000 });
  return { backend, provider };
}

test('tries once, then queues until the deadline; a hand-off is the lock, its lease timed from the hand-off', async () => {
  const { backend, provider } = setup();
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 10_000, ttlMs: 300 }));
  await advanceTo(400);
  expect(backend.timesOf('tryGrant'), 'the queue, not polling, does the waiting').toEqual([0]);
  expect(backend.queuedDeadlines).toEqual([10_000]);
  backend.handOff('k');
  await advanceTo(400);
  expect(waiting.value?.token).toBe(1n);
  expect(waiting.value?.expiresAt?.getTime()).toBe(400 + 300);
  await advanceTo(500);
  expect(backend.timesOf('extend'), 'renewed a third of the TTL after the hand-off').toEqual([500]);
  await provider.close();
});

test('a queued wait without a limit, or past what a timer holds, is cut by nothing but a hand-off or an abort', async () => {
  const { backend, provider } = setup();
  const unlimited = outcomeOf(provider.acquire('k'));
  const beyondTimers = outcomeOf(provider.acquire('k', { waitMs: 2 ** 31 }));
  await advanceTo(60_000);
  expect(backend.queue.size('k')).toBe(2);
  expect(unlimited.settled || beyondTimers.settled, 'a wait with no near deadline was cut').toBe(false);
  backend.handOff('k');
  await advanceTo(60_000);
  expect(unlimited.value?.token).toBe(1n);
  await unlimited.value?.release();
  backend.handOff('k');
  await advanceTo(60_000);
  expect(beyondTimers.value?.token).toBe(2n);
  await provider.close();
});

test('a key free at once is granted by the first try, without queueing', async () => {
  const { backend, provider } = setup();
  backend.holders.clear();
  const lock = await provider.acquire('k', { waitMs: 10_000 });
  expect(lock.token).toBe(1n);
  expect(backend.queuedDeadlines).toEqual([]);
  await provider.close();
});

test('waitMs: 0 on a busy key is a LockTimeoutError without queueing', async () => {
  const { backend, provider } = setup();
  await expect(provider.acquire('k', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
  expect(backend.queuedDeadlines).toEqual([]);
  await provider.close();
});

test('no hand-off before the deadline is a LockTimeoutError exactly at waitMs, leaving no queue entry', async () => {
  const { backend, provider } = setup();
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 1000 }));
  await advanceTo(999);
  expect(waiting.settled).toBe(false);
  await advanceTo(1000);
  expect(waiting.error).toBeInstanceOf(LockTimeoutError);
  expect(backend.queue.size()).toBe(0);
  expect(vi.getTimerCount()).toBe(0);
  await provider.close();
});

test('an abort while queued is a LockAbortedError, leaving no queue entry and no timer', async () => {
  const { backend, provider } = setup();
  const controller = new AbortController();
  const waiting = outcomeOf(provider.acquire('k', { signal: controller.signal }));
  await advanceTo(300);
  expect(backend.queue.size('k')).toBe(1);
  controller.abort();
  await advanceTo(300);
  expect(waiting.error).toBeInstanceOf(LockAbortedError);
  expect(backend.queue.size()).toBe(0);
  expect(backend.handOff('k'), 'nobody left to hand the key to').toBe(false);
  expect(vi.getTimerCount()).toBe(0);
  await provider.close();
});

test('a failing queue is a BackendError, not a timeout', async () => {
  const { backend, provider } = setup();
  backend.failQueue = true;
  const error = await provider.acquire('k', { waitMs: 1000 }).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(BackendError);
  expect((error as Error).message).toContain('ECONNRESET');
  await provider.close();
});

test('a backend failure of the first try is no answer: the acquire goes on to queue, as a polling wait retries it', async () => {
  const { backend, provider } = setup();
  backend.behaviour.tryGrant = 'fail';
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 10_000 }));
  await advanceTo(100);
  expect(backend.queuedDeadlines, 'the failed try was followed by the queued wait').toEqual([10_000]);
  backend.handOff('k');
  await advanceTo(100);
  expect(waiting.value?.token).toBe(1n);
  await provider.close();
});

test('waitMs: 0 keeps a backend failure of its one try', async () => {
  const { backend, provider } = setup();
  backend.behaviour.tryGrant = 'fail';
  await expect(provider.acquire('k', { waitMs: 0 })).rejects.toBeInstanceOf(BackendError);
  expect(backend.queuedDeadlines).toEqual([]);
  await provider.close();
});

test('a queued wait that ignores its deadline is cut by core a second after it, and its late grant released', async () => {
  const { backend, provider } = setup();
  backend.deafQueue = true;
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 1000 }));
  await advanceTo(1999);
  expect(waiting.settled, 'core waited for a hung queue past its overrun').toBe(false);
  await advanceTo(2000);
  expect(waiting.error).toBeInstanceOf(BackendError);
  expect((waiting.error as Error).message).toContain('past its deadline');
  expect(backend.handOff('k'), 'the adapter still had the waiter').toBe(true);
  await advanceTo(2000);
  expect(backend.holders.has('k'), 'the late grant was released').toBe(false);
  expect(vi.getTimerCount()).toBe(0);
  await provider.close();
});

test('a queued wait that ignores an abort is cut by core a second after it', async () => {
  const { backend, provider } = setup();
  backend.deafQueue = true;
  const controller = new AbortController();
  const waiting = outcomeOf(provider.acquire('k', { signal: controller.signal }));
  await advanceTo(300);
  controller.abort();
  await advanceTo(1299);
  expect(waiting.settled).toBe(false);
  await advanceTo(1300);
  expect(waiting.error).toBeInstanceOf(LockAbortedError);
  backend.handOff('k');
  await advanceTo(1300);
  expect(backend.holders.has('k'), 'the late grant was released').toBe(false);
  await provider.close();
});
