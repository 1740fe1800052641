import { expect, test, vi } from 'vitest';
import { createProvider } from '../src/backend-index.js';
import { LockAbortedError, LockTimeoutError } from '../src/index.js';
import { advanceTo, outcomeOf, useFakeClock } from './fixtures/fake-clock.js';
import { WakingBackend } from './fixtures/waking-backend.js';

useFakeClock();

const POLL_MS = 100;

/** A backend with waitForChange, whose key "k" another process holds. */
function setup() {
  const backend = new WakingBackend();
  backend.holders.set('k', 'another-process');
  const provider = createProvider(backend, { pollIntervalMs: POLL_MS, callTimeoutMs: 5000 });
  return { backend, provider };
}

test('each wait gets the hint of the busy answer just before it, and only a wake-up brings the next attempt (no polling)', async () => {
  const { backend, provider } = setup();
  backend.busyWake = { index: 7 };
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 10_000 }));
  await advanceTo(500);
  expect(backend.timesOf('tryGrant')).toEqual([0]);
  expect(backend.waits).toEqual([{ key: 'k', at: 0, wake: { index: 7 }, timeoutMs: 10_000 }]);
  backend.busyWake = { index: 8 };
  backend.wake('k');
  await advanceTo(500);
  expect(backend.timesOf('tryGrant')).toEqual([0, 500]);
  expect(backend.waits[1]).toEqual({ key: 'k', at: 500, wake: { index: 8 }, timeoutMs: 9500 });
  await advanceTo(700);
  backend.holders.delete('k');
  backend.wake('k');
  await advanceTo(700);
  expect(waiting.value?.token).toBe(1n);
  expect(backend.timesOf('tryGrant')).toEqual([0, 500, 700]);
  await provider.close();
});

test('a wait is sliced to 15 s, so a missed wake-up costs at most that', async () => {
  const backend = new WakingBackend();
  backend.holders.set('k', 'another-process');
  // A per-call timeout above the slice: see the known bug below for what the default 5 s does.
  const provider = createProvider(backend, { pollIntervalMs: POLL_MS, callTimeoutMs: 60_000 });
  const waiting = outcomeOf(provider.acquire('k'));
  await advanceTo(30_000);
  expect(backend.timesOf('tryGrant')).toEqual([0, 15_000, 30_000]);
  expect(backend.waits.map((wait) => wait.timeoutMs)).toEqual([15_000, 15_000, 15_000]);
  expect(waiting.settled).toBe(false);
  await provider.close();
});

// Known bug, reported: the wait runs under the per-call timeout (default 5 s), so every 15 s slice is
// cut at 5 s and counted as a failed wait, and the adapter's wait goes on (waitForChange gets the
// acquire's signal, not the call's): one acquire keeps up to three adapter waits open. Make this a
// plain test() once grant-taker.ts bounds the wait by its slice and hands the adapter call.signal.
test('with the default callTimeoutMs a wait runs its whole slice, and an acquire never has two adapter waits open', async () => {
  const backend = new WakingBackend();
  backend.holders.set('k', 'another-process');
  const provider = createProvider(backend, { pollIntervalMs: POLL_MS });
  try {
    outcomeOf(provider.acquire('k'));
    await advanceTo(12_000);
    expect(backend.timesOf('tryGrant')).toEqual([0]);
    expect(backend.waiters.size('k')).toBe(1);
  } finally {
    backend.waiters.wakeEveryone(undefined);
    await provider.close();
  }
});

test('a failed wait is no answer about the key: core polls once after pollIntervalMs and waits again', async () => {
  const { backend, provider } = setup();
  backend.waitBehaviour = 'fail';
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 350 }));
  await advanceTo(350);
  expect(backend.timesOf('tryGrant')).toEqual([0, 100, 200, 300]);
  expect(backend.waits.map((wait) => wait.at)).toEqual([0, 100, 200, 300]);
  expect(waiting.error).toBeInstanceOf(LockTimeoutError);
  await provider.close();
});

test('a wait that ignores its timeout is abandoned 1 s past it; the acquire still ends', async () => {
  const { backend, provider } = setup();
  backend.waitBehaviour = 'ignore-timeout';
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 3000 }));
  await advanceTo(4099);
  expect(waiting.settled).toBe(false);
  // Cut at 4000 ms (3000 + 1000 of overrun), then the usual poll interval before giving up.
  await advanceTo(4100);
  expect(waiting.error).toBeInstanceOf(LockTimeoutError);
  backend.waiters.wakeEveryone(undefined);
  await provider.close();
});

test('an abort during a wait rejects with LockAbortedError and leaves no waiter, listener or timer', async () => {
  const { backend, provider } = setup();
  const controller = new AbortController();
  const waiting = outcomeOf(provider.acquire('k', { signal: controller.signal }));
  await advanceTo(200);
  expect(backend.waiters.size('k')).toBe(1);
  controller.abort();
  await advanceTo(200);
  expect(waiting.error).toBeInstanceOf(LockAbortedError);
  expect(backend.waiters.size()).toBe(0);
  // At most the calls' deadline timer, idle and unref'd (CallDeadlines); close() clears it.
  expect(vi.getTimerCount()).toBeLessThanOrEqual(1);
  await provider.close();
  expect(vi.getTimerCount()).toBe(0);
});
