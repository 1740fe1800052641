import { getEventListeners } from 'node:events';
import { expect, test, vi } from 'vitest';
import { WaitList } from '../src/wait-list.js';
import { advanceTo, outcomeOf, useFakeClock } from './fixtures/fake-clock.js';

useFakeClock();

const FOREVER = { signal: new AbortController().signal, timeoutMs: Infinity };

test('wakeFirst wakes the longest waiter with a value made from its payload, in arrival order', async () => {
  const list = new WaitList<string, string, string>();
  const first = list.wait('k', FOREVER, 'first');
  const second = list.wait('k', FOREVER, 'second');
  const elsewhere = outcomeOf(list.wait('other', FOREVER, 'elsewhere'));
  expect(list.wakeFirst('k', (payload) => `granted to ${payload}`)).toBe(true);
  expect(await first).toBe('granted to first');
  expect(list.size('k')).toBe(1);
  expect(list.wakeFirst('k', (payload) => `granted to ${payload}`)).toBe(true);
  expect(await second).toBe('granted to second');
  expect(list.wakeFirst('k', () => 'nobody')).toBe(false);
  expect(list.has('k')).toBe(false);
  await advanceTo(0);
  expect(elsewhere.settled, 'other keys are not woken').toBe(false);
  list.wakeEveryone('');
});

test('wakeAll wakes every waiter of the key with the value and says how many', async () => {
  const list = new WaitList<string, number>();
  const waits = [list.wait('k', FOREVER), list.wait('k', FOREVER), list.wait('k', FOREVER)];
  const elsewhere = list.wait('other', FOREVER);
  expect(list.wakeAll('k', 42)).toBe(3);
  expect(await Promise.all(waits)).toEqual([42, 42, 42]);
  expect(list.wakeAll('k', 43)).toBe(0);
  expect(list.size()).toBe(1);
  expect(list.wakeEveryone(7)).toBe(1);
  expect(await elsewhere).toBe(7);
  expect(list.size()).toBe(0);
});

test('a timeout resolves undefined exactly at timeoutMs and removes the waiter and its abort listener', async () => {
  const list = new WaitList<string, number>();
  const { signal } = new AbortController();
  const waiting = outcomeOf(list.wait('k', { signal, timeoutMs: 500 }));
  expect(getEventListeners(signal, 'abort')).toHaveLength(1);
  await advanceTo(499);
  expect(waiting.settled).toBe(false);
  await advanceTo(500);
  expect(waiting).toEqual({ settled: true, value: undefined, error: undefined });
  expect(list.size()).toBe(0);
  expect(list.has('k')).toBe(false);
  expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  expect(vi.getTimerCount()).toBe(0);
});

test('an abort resolves undefined at once and clears the timer', async () => {
  const list = new WaitList<string, number>();
  const controller = new AbortController();
  const waiting = outcomeOf(list.wait('k', { signal: controller.signal, timeoutMs: 500 }));
  expect(vi.getTimerCount()).toBe(1);
  controller.abort();
  await advanceTo(0);
  expect(waiting).toEqual({ settled: true, value: undefined, error: undefined });
  expect(list.size()).toBe(0);
  expect(vi.getTimerCount()).toBe(0);
  expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
});

test('a wake-up clears the timer and the listener too', async () => {
  const list = new WaitList<string, number>();
  const { signal } = new AbortController();
  const waiting = list.wait('k', { signal, timeoutMs: 500 });
  list.wakeAll('k', 1);
  expect(await waiting).toBe(1);
  expect(vi.getTimerCount()).toBe(0);
  expect(getEventListeners(signal, 'abort')).toHaveLength(0);
});

test('an aborted signal or no time left resolves undefined without registering anything', async () => {
  const list = new WaitList<string, number>();
  const aborted = AbortSignal.abort();
  expect(await list.wait('k', { signal: aborted, timeoutMs: 500 })).toBeUndefined();
  expect(await list.wait('k', { signal: new AbortController().signal, timeoutMs: 0 })).toBeUndefined();
  expect(list.size()).toBe(0);
  expect(vi.getTimerCount()).toBe(0);
});

test('a timeout past setTimeout range waits until woken, arming no timer (one would fire at once)', async () => {
  const list = new WaitList<string, number>();
  const waiting = outcomeOf(list.wait('k', { signal: new AbortController().signal, timeoutMs: 2 ** 31 }));
  expect(vi.getTimerCount()).toBe(0);
  await advanceTo(10_000);
  expect(waiting.settled).toBe(false);
  list.wakeAll('k', 1);
  await advanceTo(10_001);
  expect(waiting).toEqual({ settled: true, value: 1, error: undefined });
});
