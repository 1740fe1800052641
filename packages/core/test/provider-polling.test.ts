import { expect, test, vi } from 'vitest';
import { createProvider } from '../src/backend-index.js';
import { BackendError, ErrorCode, LockAbortedError, LockTimeoutError } from '../src/index.js';
import { advanceTo, outcomeOf, useFakeClock } from './fixtures/fake-clock.js';
import { ScriptedBackend } from './fixtures/scripted-backend.js';

useFakeClock();

const POLL_MS = 100;

/** A backend without waitForChange, whose key "k" another process holds. */
function setup() {
  const backend = new ScriptedBackend();
  backend.holders.set('k', 'another-process');
  const provider = createProvider(backend, { pollIntervalMs: POLL_MS, callTimeoutMs: 5000 });
  return { backend, provider };
}

test('a busy key is tried every pollIntervalMs and the wait ends with LockTimeoutError exactly at waitMs', async () => {
  const { backend, provider } = setup();
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 1000 }));
  await advanceTo(999);
  expect(waiting.settled).toBe(false);
  expect(backend.timesOf('tryGrant')).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900]);
  await advanceTo(1000);
  const error = waiting.error as LockTimeoutError;
  expect(error).toBeInstanceOf(LockTimeoutError);
  expect(error.code).toBe(ErrorCode.Timeout);
  expect(error.waitMs).toBe(1000);
  expect(backend.timesOf('tryGrant'), 'no attempt at the deadline: it could only be cut short').toHaveLength(10);
  expect(vi.getTimerCount()).toBe(0);
  await provider.close();
});

test('a key freed during the wait is taken at the next poll', async () => {
  const { backend, provider } = setup();
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 1000 }));
  await advanceTo(250);
  backend.holders.delete('k');
  await advanceTo(299);
  expect(waiting.settled).toBe(false);
  await advanceTo(300);
  expect(waiting.value?.token).toBe(1n);
  expect(backend.timesOf('tryGrant')).toEqual([0, 100, 200, 300]);
  await provider.close();
});

test('backend failures are retried with doubling pauses (capped at 1 s); the last BackendError ends the wait at waitMs', async () => {
  const { backend, provider } = setup();
  backend.behaviour.tryGrant = 'fail';
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 3000, waitForBackend: true }));
  await advanceTo(2999);
  expect(waiting.settled).toBe(false);
  expect(backend.timesOf('tryGrant')).toEqual([0, 100, 300, 700, 1500, 2500]);
  await advanceTo(3000);
  expect(waiting.error).toBeInstanceOf(BackendError);
  expect((waiting.error as Error).message, "the backend's own failure, not a cut-short attempt").toContain('ECONNREFUSED');
  expect(backend.timesOf('tryGrant'), 'no attempt at the deadline: it could only be cut short').toHaveLength(6);
  expect(vi.getTimerCount()).toBe(0);
  await provider.close();
});

test('once the backend answers busy again, the wait goes back to polling and ends as a timeout, not a failure', async () => {
  const { backend, provider } = setup();
  backend.behaviour.tryGrant = 'fail';
  backend.failuresLeft = 2;
  const waiting = outcomeOf(provider.acquire('k', { waitMs: 700, waitForBackend: true }));
  await advanceTo(700);
  expect(backend.timesOf('tryGrant'), 'failed at 0 and 100, busy from 300 on').toEqual([0, 100, 300, 400, 500, 600]);
  expect(waiting.error).toBeInstanceOf(LockTimeoutError);
  await provider.close();
});

test('an abort during the wait rejects with LockAbortedError and leaves nothing behind', async () => {
  const { backend, provider } = setup();
  const controller = new AbortController();
  const waiting = outcomeOf(provider.acquire('k', { signal: controller.signal }));
  await advanceTo(250);
  controller.abort('shutting down');
  await advanceTo(250);
  expect(waiting.error).toBeInstanceOf(LockAbortedError);
  expect((waiting.error as Error).cause).toBe('shutting down');
  expect(vi.getTimerCount()).toBe(0);
  await advanceTo(5000);
  expect(backend.timesOf('tryGrant')).toEqual([0, 100, 200]);
  await provider.close();
});

test('an abort while an attempt is in flight cancels the call; the late grant is undone', async () => {
  const { backend, provider } = setup();
  backend.holders.clear();
  backend.behaviour.tryGrant = 'hang';
  const controller = new AbortController();
  const waiting = outcomeOf(provider.acquire('k', { signal: controller.signal }));
  await advanceTo(100);
  controller.abort();
  await advanceTo(100);
  expect(waiting.error).toBeInstanceOf(LockAbortedError);
  expect(backend.aborts).toEqual(['tryGrant']);
  // The call's own timer is gone; the call lane keeps its idle one, unref'd (call-deadlines.test.ts), until close().
  expect(vi.getTimerCount()).toBe(1);
  backend.heldBack[0]!();
  await advanceTo(100);
  expect(backend.holders.has('k'), 'the grant that landed late was released').toBe(false);
  await provider.close();
  expect(vi.getTimerCount()).toBe(0);
});
