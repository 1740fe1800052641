import { expect, test, vi } from 'vitest';
import { createProvider } from '../src/backend-index.js';
import { BackendError, ErrorCode, LockLostError, LockNotHeldError, LockReleasedError } from '../src/index.js';
import { advanceTo, useFakeClock } from './fixtures/fake-clock.js';
import { ScriptedBackend } from './fixtures/scripted-backend.js';

useFakeClock();

/** Renewal every 100 ms, safety deadline 270 ms into the lease. */
const TTL_MS = 300;

function setup() {
  const backend = new ScriptedBackend();
  const provider = createProvider(backend, { callTimeoutMs: 5000 });
  return { backend, provider };
}

test('release stops renewal and leaves no timer behind', async () => {
  const { backend, provider } = setup();
  const lock = await provider.acquire('k', { ttlMs: TTL_MS });
  await advanceTo(50);
  await lock.release();
  expect(vi.getTimerCount(), 'the renewal timer is cleared by the release itself').toBe(0);
  await advanceTo(1000);
  expect(backend.timesOf('extend')).toEqual([]);
  expect(backend.timesOf('release')).toEqual([50]);
  expect(vi.getTimerCount()).toBe(0);
  await expect(lock.extend()).rejects.toBeInstanceOf(LockNotHeldError);
  await provider.close();
});

test('a signal first read after release is already aborted with LockReleasedError', async () => {
  const { provider } = setup();
  const lock = await provider.acquire('k', { ttlMs: TTL_MS });
  await lock.release();
  const reason = lock.signal.reason as LockReleasedError;
  expect(lock.signal.aborted).toBe(true);
  expect(reason).toBeInstanceOf(LockReleasedError);
  expect(reason.code).toBe(ErrorCode.Released);
  await provider.close();
});

test('a signal read while held aborts once, at the release', async () => {
  const { provider } = setup();
  const lock = await provider.acquire('k', { ttlMs: TTL_MS });
  const reasons: unknown[] = [];
  lock.signal.addEventListener('abort', () => reasons.push(lock.signal.reason));
  await advanceTo(500);
  expect(reasons).toEqual([]);
  await lock.release();
  await lock.release();
  expect(reasons).toHaveLength(1);
  expect(reasons[0]).toBeInstanceOf(LockReleasedError);
  await provider.close();
});

test('a signal first read after the loss is already aborted with LockLostError', async () => {
  const { backend, provider } = setup();
  const lock = await provider.acquire('k', { ttlMs: TTL_MS });
  backend.behaviour.extend = 'fail';
  await advanceTo(270);
  expect(lock.signal.reason).toBeInstanceOf(LockLostError);
  await expect(lock.extend(), 'a lost handle cannot be extended').rejects.toBeInstanceOf(LockLostError);
  await provider.close();
});

test("a lost lock's grant is released in the background, with growing pauses, until the backend answers", async () => {
  const { backend, provider } = setup();
  await provider.acquire('k', { ttlMs: TTL_MS });
  backend.behaviour.extend = 'fail';
  backend.behaviour.release = 'fail';
  await advanceTo(1000);
  expect(backend.timesOf('release'), 'lost at 270 ms, then pauses of 100, 200, 400 ms').toEqual([270, 370, 570, 970]);
  expect(backend.holders.has('k')).toBe(true);
  backend.behaviour.release = 'normal';
  await advanceTo(1769);
  expect(backend.holders.has('k')).toBe(true);
  await advanceTo(1770);
  expect(backend.holders.has('k'), 'released after the 800 ms pause').toBe(false);
  await advanceTo(10_000);
  expect(backend.timesOf('release'), 'nothing more once released').toEqual([270, 370, 570, 970, 1770]);
  expect(vi.getTimerCount()).toBe(0);
  await provider.close();
});

test('an unconfirmed release is retried in the background for two lease windows (at least 10 s each), then given up', async () => {
  const { backend, provider } = setup();
  const lock = await provider.acquire('k', { ttlMs: TTL_MS });
  await advanceTo(50);
  backend.behaviour.release = 'fail';
  await expect(lock.release()).rejects.toBeInstanceOf(BackendError);
  expect(lock.signal.reason, 'an unconfirmed release is a loss, not a release').toBeInstanceOf(LockLostError);
  await advanceTo(60_000);
  const pausesCapped = [50, 150, 350, 750, 1550, 3150, 5150, 7150, 9150, 11_150, 13_150, 15_150, 17_150, 19_150];
  expect(backend.timesOf('release'), "the caller's release, then the background's until 20 050 ms").toEqual([50, ...pausesCapped]);
  expect(vi.getTimerCount()).toBe(0);
  await provider.close();
});
