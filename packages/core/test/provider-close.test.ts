import { expect, test, vi } from 'vitest';
import { createProvider } from '../src/backend-index.js';
import { LockLostError, LockReleasedError, ProviderClosedError } from '../src/index.js';
import { advanceTo, outcomeOf, useFakeClock } from './fixtures/fake-clock.js';
import { ScriptedBackend } from './fixtures/scripted-backend.js';

useFakeClock();

function setup(closeTimeoutMs: number) {
  const backend = new ScriptedBackend();
  const provider = createProvider(backend, { closeTimeoutMs, callTimeoutMs: 5000, pollIntervalMs: 100 });
  return { backend, provider };
}

test('close() releases every held lock: each signal aborts with LockReleasedError', async () => {
  const { backend, provider } = setup(1000);
  const locks = [await provider.acquire('a'), await provider.acquire('b')];
  await provider.close();
  expect(locks.map((lock) => lock.signal.reason)).toEqual([expect.any(LockReleasedError), expect.any(LockReleasedError)]);
  expect(backend.holders.size).toBe(0);
  expect(backend.timesOf('close')).toEqual([0]);
  expect(vi.getTimerCount()).toBe(0);
  expect(provider.close(), 'idempotent: the same close').toBe(provider.close());
});

test('a hung backend holds close() no longer than closeTimeoutMs, plus 50 ms for the adapter to drop its connections', async () => {
  const { backend, provider } = setup(300);
  const lock = await provider.acquire('k');
  backend.behaviour.release = 'hang';
  backend.behaviour.close = 'hang';
  const closing = outcomeOf(provider.close());
  await advanceTo(299);
  expect(lock.signal.aborted).toBe(false);
  await advanceTo(300);
  expect(lock.signal.reason, 'an unconfirmed release reports the lock lost').toBeInstanceOf(LockLostError);
  expect((lock.signal.reason as Error).message).toContain('release was not confirmed');
  await advanceTo(349);
  expect(closing.settled).toBe(false);
  await advanceTo(350);
  expect(closing.settled).toBe(true);
  expect(closing.error).toBeUndefined();
  expect(backend.aborts).toEqual(['release', 'close']);
  expect(vi.getTimerCount()).toBe(0);
});

test('close() waits for background clean-ups that finish within the bound', async () => {
  const { backend, provider } = setup(1000);
  await provider.acquire('k', { ttlMs: 300 });
  backend.behaviour.extend = 'fail';
  backend.behaviour.release = 'slow';
  await advanceTo(300);
  expect(backend.timesOf('release'), 'the lost grant is being let go of since 270 ms').toEqual([270]);
  const closing = outcomeOf(provider.close());
  await advanceTo(469);
  expect(closing.settled).toBe(false);
  await advanceTo(470);
  expect(closing.settled).toBe(true);
  expect(backend.holders.has('k'), 'the clean-up finished before close() returned').toBe(false);
});

test('close() stops waiting for background clean-ups at closeTimeoutMs', async () => {
  const { backend, provider } = setup(1000);
  await provider.acquire('k', { ttlMs: 300 });
  backend.behaviour.extend = 'fail';
  backend.behaviour.release = 'slow';
  backend.slowMs = 3000;
  await advanceTo(300);
  const closing = outcomeOf(provider.close());
  await advanceTo(1299);
  expect(closing.settled).toBe(false);
  await advanceTo(1300);
  expect(closing.settled).toBe(true);
  expect(backend.timesOf('close')).toEqual([1300]);
  // The clean-up's call itself is not cancelled by close(), only bounded by callTimeoutMs: it lands later.
  await advanceTo(3270);
  expect(backend.holders.has('k')).toBe(false);
  expect(vi.getTimerCount()).toBe(0);
});

test('close() ends a waiting acquire with ProviderClosedError and leaves no timer', async () => {
  const { backend, provider } = setup(1000);
  backend.holders.set('k', 'another-process');
  const waiting = outcomeOf(provider.acquire('k'));
  await advanceTo(250);
  await provider.close();
  expect(waiting.error).toBeInstanceOf(ProviderClosedError);
  expect(vi.getTimerCount()).toBe(0);
  await advanceTo(1000);
  expect(backend.timesOf('tryGrant')).toEqual([0, 100, 200]);
  await expect(provider.acquire('k')).rejects.toBeInstanceOf(ProviderClosedError);
});
