import { expect, test, vi } from 'vitest';
import { DeadlineLane, type Expiring } from '../src/call-deadlines.js';
import { advanceTo, useFakeClock } from './fixtures/fake-clock.js';

useFakeClock();

const nextTick = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));

function call(lane: DeadlineLane, expired: string[], name: string): Expiring {
  const entry = { dueAt: performance.now() + lane.budgetMs, expire: () => void expired.push(`${name}@${Date.now()}`) };
  lane.add(entry);
  return entry;
}

test('each call expires at its own deadline, on one timer re-armed for the oldest still pending', async () => {
  const lane = new DeadlineLane(5000);
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

test('a call that settles before the next tick never sets a timer; the last one to settle clears it', async () => {
  const lane = new DeadlineLane(5000);
  const expired: string[] = [];
  lane.delete(call(lane, expired, 'quick'));
  await nextTick();
  expect(vi.getTimerCount()).toBe(0);
  const slow = call(lane, expired, 'slow');
  await nextTick();
  expect(vi.getTimerCount()).toBe(1);
  await advanceTo(1000);
  lane.delete(slow);
  expect(vi.getTimerCount()).toBe(0);
  await advanceTo(10_000);
  expect(expired).toEqual([]);
});
