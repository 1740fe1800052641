import { expect, test, vi } from 'vitest';
import { createProvider } from '../src/backend-index.js';
import { BackendError, ErrorCode, LockLostError } from '../src/index.js';
import { advanceTo, useFakeClock } from './fixtures/fake-clock.js';
import { ScriptedBackend } from './fixtures/scripted-backend.js';

useFakeClock();

/** Renewal every 100 ms, retries every 30 ms (a tenth), safety deadline 270 ms into each lease. */
const TTL_MS = 300;

function setup() {
  const backend = new ScriptedBackend();
  // A per-call timeout longer than the lease: only the safety deadline can cut a renewal short.
  const provider = createProvider(backend, { callTimeoutMs: 5000 });
  return { backend, provider };
}

test('renews a third into the lease, and a third into each renewed lease', async () => {
  const { backend, provider } = setup();
  const lock = await provider.acquire('k', { ttlMs: TTL_MS });
  await advanceTo(99);
  expect(backend.timesOf('extend')).toEqual([]);
  await advanceTo(350);
  expect(backend.calls.filter((call) => call.operation === 'extend')).toEqual([
    { operation: 'extend', at: 100, ttlMs: TTL_MS },
    { operation: 'extend', at: 200, ttlMs: TTL_MS },
    { operation: 'extend', at: 300, ttlMs: TTL_MS },
  ]);
  expect(lock.expiresAt?.getTime(), 'the local lease runs from the last renewal').toBe(300 + TTL_MS);
  expect(lock.signal.aborted).toBe(false);
  await provider.close();
});

test('a lock released as soon as it was granted never sets a renewal timer (armed on the next tick)', async () => {
  const { backend, provider } = setup();
  const setTimeoutCalls = vi.spyOn(globalThis, 'setTimeout');
  const lock = await provider.acquire('k', { ttlMs: TTL_MS });
  await lock.release();
  await advanceTo(1000);
  expect(setTimeoutCalls).not.toHaveBeenCalled();
  expect(backend.timesOf('extend')).toEqual([]);
  await provider.close();
});

test('a failing renewal is retried every tenth of the lease; the lock is lost exactly at the safety deadline', async () => {
  const { backend, provider } = setup();
  const lock = await provider.acquire('k', { ttlMs: TTL_MS });
  backend.behaviour.extend = 'fail';
  await advanceTo(269);
  expect(backend.timesOf('extend')).toEqual([100, 130, 160, 190, 220, 250]);
  expect(lock.signal.aborted, 'lost before the safety deadline').toBe(false);
  await advanceTo(270);
  const reason = lock.signal.reason as LockLostError;
  expect(reason).toBeInstanceOf(LockLostError);
  expect(reason.code).toBe(ErrorCode.Lost);
  expect(reason.message).toContain('renewal did not succeed before the lease ran out');
  expect(reason.cause, 'the last renewal failure is the cause').toBeInstanceOf(BackendError);
  expect(backend.timesOf('extend'), 'no renewal after the loss').toEqual([100, 130, 160, 190, 220, 250]);
  expect(provider.held()).toEqual([]);
  await provider.close();
});

test('a renewal that hangs is abandoned at the safety deadline and the lock ends as lost', async () => {
  const { backend, provider } = setup();
  const lock = await provider.acquire('k', { ttlMs: TTL_MS });
  backend.behaviour.extend = 'hang';
  await advanceTo(269);
  expect(backend.timesOf('extend'), 'a hung renewal is not sent twice').toEqual([100]);
  expect(lock.signal.aborted).toBe(false);
  await advanceTo(270);
  expect(lock.signal.reason).toBeInstanceOf(LockLostError);
  expect(backend.aborts, "the hung call's own signal was aborted").toEqual(['extend']);
  expect(backend.holders.has('k'), 'the lost grant is let go of on the server').toBe(false);
  await provider.close();
});

test('a renewal the backend refuses ends the lock at once and never frees the new holder', async () => {
  const { backend, provider } = setup();
  const lock = await provider.acquire('k', { ttlMs: TTL_MS });
  backend.holders.set('k', 'someone-else');
  await advanceTo(100);
  expect(lock.signal.reason).toBeInstanceOf(LockLostError);
  expect((lock.signal.reason as Error).message).toContain('held by someone else or gone');
  expect(backend.timesOf('release'), 'the owner-checked let-go was tried').toEqual([100]);
  expect(backend.holders.get('k')).toBe('someone-else');
  await provider.close();
});

test('autoRenew: false schedules only the lease end, where the lock is lost without any release call', async () => {
  const { backend, provider } = setup();
  const lock = await provider.acquire('k', { ttlMs: TTL_MS, autoRenew: false });
  expect(vi.getTimerCount(), 'armed on the next tick: a lock released at once never sets it').toBe(0);
  await new Promise((resolve) => process.nextTick(resolve));
  expect(vi.getTimerCount(), 'one timer: the lease end').toBe(1);
  await advanceTo(269);
  expect(lock.signal.aborted).toBe(false);
  await advanceTo(270);
  expect(lock.signal.reason).toBeInstanceOf(LockLostError);
  expect((lock.signal.reason as Error).message).toContain('autoRenew: false');
  await advanceTo(5000);
  expect(
    backend.calls.map((call) => call.operation),
    'no renewal, no let-go: the lease simply runs out',
  ).toEqual(['tryGrant']);
  expect(vi.getTimerCount()).toBe(0);
  await provider.close();
});

test('extend(ttl) starts a new lease now: the next renewal is a third of the new TTL later', async () => {
  const { backend, provider } = setup();
  const lock = await provider.acquire('k', { ttlMs: TTL_MS });
  await advanceTo(50);
  await lock.extend(600);
  expect(lock.expiresAt?.getTime()).toBe(50 + 600);
  await advanceTo(249);
  expect(backend.timesOf('extend'), 'the old schedule (100 ms) was dropped').toEqual([50]);
  await advanceTo(250);
  expect(backend.calls.filter((call) => call.operation === 'extend')).toEqual([
    { operation: 'extend', at: 50, ttlMs: 600 },
    { operation: 'extend', at: 250, ttlMs: 600 },
  ]);
  await provider.close();
});
