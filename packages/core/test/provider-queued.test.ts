import { getEventListeners } from 'node:events';
import { expect, test, vi } from 'vitest';
import { createProvider } from '../src/backend-index.js';
import { BackendError, LockAbortedError, LockTimeoutError, ProviderClosedError } from '../src/index.js';
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

/** Frees the key as its holder's release would: waiters are woken, the first in line may take it. */
function release(backend: QueuedBackend, key: string): void {
  backend.holders.delete(key);
  backend.wake(key);
}

test('every attempt of one waiting acquire carries the same place, with the deadline, while the lockId changes', async () => {
  const { backend, provider } = setup();
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 10_000, ttlMs: 300 }));
  await advanceTo(400);
  expect(backend.timesOf('tryGrant'), 'the wake-up, not polling, does the waiting').toEqual([0]);
  expect(backend.lineOf('k')).toHaveLength(1);
  backend.wake('k');
  await advanceTo(400);
  const [first, second] = backend.requests;
  expect(first?.place).toEqual({ id: expect.any(String), until: 10_000 });
  expect(second?.place).toBe(first?.place);
  expect(second?.lockId, 'a refused attempt is retried under a new lockId').not.toBe(first?.lockId);
  await advanceTo(450);
  release(backend, 'k');
  await advanceTo(450);
  expect(waiting.value?.token).toBe(1n);
  expect(waiting.value?.expiresAt?.getTime(), 'the lease is timed from the granting attempt').toBe(450 + 300);
  expect(backend.lineOf('k'), 'the grant took the place out of the line').toEqual([]);
  expect(backend.left, 'a waiter that got the lock does not leave the queue again').toEqual([]);
  await provider.close();
});

test('two waiters are served in line order whatever order the wake-ups come in', async () => {
  const { backend, provider } = setup();
  const first = outcomeOf(provider.acquire('k', { waitMs: 10_000 }));
  await advanceTo(10);
  const second = outcomeOf(provider.acquire('k', { waitMs: 10_000 }));
  await advanceTo(20);
  expect(backend.lineOf('k')).toHaveLength(2);
  release(backend, 'k');
  await advanceTo(20);
  expect(first.value?.token).toBe(1n);
  expect(second.settled).toBe(false);
  await first.value?.release();
  await advanceTo(20);
  expect(second.value?.token).toBe(2n);
  await provider.close();
});

test('a wait without a limit, or past what a timer holds, is cut by nothing but a grant or an abort', async () => {
  const { backend, provider } = setup();
  const unlimited = outcomeOf(provider.acquire('k'));
  const beyondTimers = outcomeOf(provider.acquire('k', { waitMs: 2 ** 31 }));
  await advanceTo(60_000);
  expect(backend.lineOf('k')).toHaveLength(2);
  expect(unlimited.settled || beyondTimers.settled, 'a wait with no near deadline was cut').toBe(false);
  release(backend, 'k');
  await advanceTo(60_000);
  expect(unlimited.value?.token).toBe(1n);
  await unlimited.value?.release();
  await advanceTo(60_000);
  expect(beyondTimers.value?.token).toBe(2n);
  await provider.close();
});

test('waitMs: 0 is one attempt without a place: a busy key is a LockTimeoutError and joins no line', async () => {
  const { backend, provider } = setup();
  await expect(provider.acquire('k', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
  await expect(provider.tryAcquire('k')).resolves.toBeNull();
  expect(backend.requests.map((request) => request.place)).toEqual([undefined, undefined]);
  expect(backend.lineOf('k')).toEqual([]);
  expect(backend.left).toEqual([]);
  await provider.close();
});

test('no grant before the deadline is a LockTimeoutError exactly at waitMs, and the place leaves the line', async () => {
  const { backend, provider } = setup();
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 1000 }));
  await advanceTo(999);
  expect(waiting.settled).toBe(false);
  await advanceTo(1000);
  expect(waiting.error).toBeInstanceOf(LockTimeoutError);
  expect(backend.left.map(({ key, place, at }) => ({ key, id: place.id, at }))).toEqual([
    { key: 'k', id: backend.requests[0]?.place?.id, at: 1000 },
  ]);
  expect(backend.lineOf('k')).toEqual([]);
  // At most the calls' deadline timer, idle and unref'd (CallDeadlines); close() clears it.
  expect(vi.getTimerCount()).toBeLessThanOrEqual(1);
  await provider.close();
  expect(vi.getTimerCount()).toBe(0);
});

test('an abort while waiting is a LockAbortedError; the place leaves the line, no timer is left', async () => {
  const { backend, provider } = setup();
  const controller = new AbortController();
  const waiting = outcomeOf(provider.acquire('k', { signal: controller.signal }));
  await advanceTo(300);
  expect(backend.lineOf('k')).toHaveLength(1);
  controller.abort();
  await advanceTo(300);
  expect(waiting.error).toBeInstanceOf(LockAbortedError);
  expect(backend.lineOf('k')).toEqual([]);
  expect(backend.left).toHaveLength(1);
  // At most the calls' deadline timer, idle and unref'd (CallDeadlines); close() clears it.
  expect(vi.getTimerCount()).toBeLessThanOrEqual(1);
  await provider.close();
  expect(vi.getTimerCount()).toBe(0);
});

test('close() ends a waiting acquire and its place leaves the line before close() resolves', async () => {
  const { backend, provider } = setup();
  const waiting = outcomeOf(provider.acquire('k'));
  await advanceTo(300);
  await provider.close();
  expect(waiting.error).toBeInstanceOf(ProviderClosedError);
  expect(backend.lineOf('k')).toEqual([]);
});

test('backend failures are retried with backoff until the deadline, then the last failure is the answer', async () => {
  const { backend, provider } = setup();
  backend.behaviour.tryGrant = 'fail';
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 1000, waitForBackend: true }));
  await advanceTo(1000);
  expect(waiting.error).toBeInstanceOf(BackendError);
  expect((waiting.error as Error).message).toContain('ECONNREFUSED');
  const times = backend.timesOf('tryGrant');
  expect(times, 'backoff doubles from the poll interval; no attempt at the deadline itself').toEqual([0, 100, 300, 700]);
  expect(backend.left, 'a failed wait leaves its place too').toHaveLength(1);
  await provider.close();
});

test('a failed first attempt is no answer: the acquire goes on and is granted once the backend answers', async () => {
  const { backend, provider } = setup();
  backend.behaviour.tryGrant = 'fail';
  backend.failuresLeft = 1;
  backend.holders.clear();
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 10_000, waitForBackend: true }));
  await advanceTo(100);
  expect(waiting.value?.token).toBe(1n);
  expect(backend.timesOf('tryGrant')).toEqual([0, 100]);
  await provider.close();
});

test('the place leaves the line only after an attempt core stopped waiting for has settled (it may join late)', async () => {
  const { backend, provider } = setup();
  backend.behaviour.tryGrant = 'hang';
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 1000 }));
  await advanceTo(1000);
  expect(waiting.error).toBeInstanceOf(BackendError);
  expect(backend.left, 'left while the cut attempt could still land').toEqual([]);
  backend.behaviour.tryGrant = 'normal';
  for (const land of backend.heldBack) land();
  await advanceTo(1000);
  expect(backend.lineOf('k'), 'the late attempt joined, then its place left').toEqual([]);
  expect(backend.left).toHaveLength(1);
  await provider.close();
});

test("waiting acquires that share one caller's signal keep one abort listener each on it, and none once they end", async () => {
  const { backend, provider } = setup();
  const shared = new AbortController();
  let most = 0;
  const add = shared.signal.addEventListener.bind(shared.signal);
  shared.signal.addEventListener = ((...args: Parameters<AbortSignal['addEventListener']>) => {
    add(...args);
    most = Math.max(most, getEventListeners(shared.signal, 'abort').length);
  }) as AbortSignal['addEventListener'];
  const waiting = Array.from({ length: 20 }, () => outcomeOf(provider.acquire('k', { signal: shared.signal, waitMs: 10_000 })));
  await advanceTo(100);
  expect(backend.lineOf('k')).toHaveLength(20);
  // Every waiter tries again: its attempt's call must not add a listener beside its wait's.
  backend.wake('k');
  await advanceTo(200);
  expect(backend.timesOf('tryGrant').length).toBeGreaterThanOrEqual(40);
  expect(most).toBeLessThanOrEqual(20);
  shared.abort('app stopping');
  await advanceTo(300);
  expect(waiting.every((outcome) => outcome.error instanceof LockAbortedError)).toBe(true);
  expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
  await provider.close();
});
