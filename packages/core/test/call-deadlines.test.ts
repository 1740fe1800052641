import { expect, test, vi } from 'vitest';
import { CallDeadlines, type Expiring } from '../src/call-deadlines.js';
import { advanceTo, useFakeClock } from './fixtures/fake-clock.js';

useFakeClock();

const nextTick = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));

function call(lane: CallDeadlines, expired: string[], name: string, budgetMs = 5000): Expiring {
  const entry = { dueAt: performance.now() + budgetMs, expire: () => void expired.push(`${name}@${Date.now()}`) };
  lane.add(entry);
  return entry;
}

test('each call expires at its own deadline, on one timer re-armed for the oldest still pending', async () => {
  const lane = new CallDeadlines();
  const expired: string[] = [];
  const first = call(lane, expired, 'first');
  await advanceTo(100);
  call(lane, expired, 'second');
  await advanceTo(150);
  call(lane, expired, 'third');
  await nextTick();
  expect(vi.getTimerCount()).toBe(1);
  lane.delete(first);
  await advanceTo(5099);
  expect(expired).toEqual([]);
  await advanceTo(5100);
  expect(expired).toEqual(['second@5100']);
  await advanceTo(5150);
  expect(expired).toEqual(['second@5100', 'third@5150']);
  expect(vi.getTimerCount(), 'nothing pending, no timer').toBe(0);
});

test('a call that settles before the next tick never sets a timer', async () => {
  const lane = new CallDeadlines();
  const expired: string[] = [];
  lane.delete(call(lane, expired, 'quick'));
  await nextTick();
  expect(vi.getTimerCount()).toBe(0);
  expect(expired).toEqual([]);
});

test('the idle timer outlives the last call, serves the next one and goes once it fired or the lane closed', async () => {
  const lane = new CallDeadlines();
  const expired: string[] = [];
  const slow = call(lane, expired, 'slow');
  await nextTick();
  expect(vi.getTimerCount()).toBe(1);
  await advanceTo(1000);
  lane.delete(slow);
  expect(vi.getTimerCount(), 'kept while idle').toBe(1);
  call(lane, expired, 'next');
  await nextTick();
  expect(vi.getTimerCount(), 'the next call sets no timer of its own').toBe(1);
  await advanceTo(5000);
  expect(expired, 'the timer fired for the settled call, then re-armed for the pending one').toEqual([]);
  expect(vi.getTimerCount()).toBe(1);
  await advanceTo(6000);
  expect(expired).toEqual(['next@6000']);
  expect(vi.getTimerCount(), 'fired with nothing pending: gone').toBe(0);
  lane.delete(call(lane, expired, 'after'));
  const last = call(lane, expired, 'last');
  await nextTick();
  lane.close();
  expect(vi.getTimerCount(), 'closed with a call pending: kept for it').toBe(1);
  lane.delete(last);
  expect(vi.getTimerCount(), 'closed: cleared with the last call').toBe(0);
  await advanceTo(20_000);
  expect(expired).toEqual(['next@6000']);
});

test("the idle timer keeps no process alive: unref'd while no call is pending, ref'd again for the next", async () => {
  vi.useRealTimers();
  const lane = new CallDeadlines();
  const refTimers = (): number => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
  const before = refTimers();
  const first = call(lane, [], 'first', 60_000);
  await nextTick();
  expect(refTimers()).toBe(before + 1);
  lane.delete(first);
  expect(refTimers(), "idle: unref'd").toBe(before);
  const second = call(lane, [], 'second', 60_000);
  expect(refTimers(), "pending again: ref'd").toBe(before + 1);
  lane.delete(second);
  lane.close();
  expect(refTimers()).toBe(before);
});

test('calls of different budgets each expire at their own deadline; only one due before the armed time sets the timer again', async () => {
  const lane = new CallDeadlines();
  const expired: string[] = [];
  const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
  call(lane, expired, 'long', 5000);
  await nextTick();
  expect(setTimeoutSpy).toHaveBeenCalledTimes(1);
  call(lane, expired, 'short', 1000);
  await nextTick();
  expect(setTimeoutSpy, 'due before the armed time: armed again').toHaveBeenCalledTimes(2);
  await advanceTo(100);
  call(lane, expired, 'later', 1000);
  call(lane, expired, 'middle', 3000);
  await nextTick();
  expect(setTimeoutSpy, 'due after the armed time: no timer of their own').toHaveBeenCalledTimes(2);
  expect(vi.getTimerCount()).toBe(1);
  await advanceTo(999);
  expect(expired).toEqual([]);
  await advanceTo(1000);
  expect(expired).toEqual(['short@1000']);
  await advanceTo(1100);
  expect(expired).toEqual(['short@1000', 'later@1100']);
  await advanceTo(3100);
  expect(expired).toEqual(['short@1000', 'later@1100', 'middle@3100']);
  await advanceTo(5000);
  expect(expired).toEqual(['short@1000', 'later@1100', 'middle@3100', 'long@5000']);
  expect(vi.getTimerCount(), 'nothing pending, no timer').toBe(0);
  setTimeoutSpy.mockRestore();
});

test('a call that expire() starts is pending like the rest and expires at its own deadline', async () => {
  const lane = new CallDeadlines();
  const expired: string[] = [];
  lane.add({
    dueAt: performance.now() + 1000,
    expire: () => {
      expired.push(`first@${Date.now()}`);
      call(lane, expired, 'undo', 500);
    },
  });
  await advanceTo(1000);
  expect(expired).toEqual(['first@1000']);
  await advanceTo(1500);
  expect(expired).toEqual(['first@1000', 'undo@1500']);
});
