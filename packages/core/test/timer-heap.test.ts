import { describe, expect, test } from 'vitest';
import { TimerHeap } from '../src/timer-heap.js';

function recorder(): { order: string[]; task: (name: string) => { run(): void } } {
  const order: string[] = [];
  return { order, task: (name) => ({ run: () => order.push(name) }) };
}

describe('TimerHeap', () => {
  test('runs tasks in due order, once each, on one Node timer', async () => {
    const heap = new TimerHeap();
    const { order, task } = recorder();
    const refTimers = (): number => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = refTimers();
    const now = Date.now();
    const delays = [40, 10, 30, 20, 50, 0, 25];
    for (const ms of delays) heap.schedule(task(`t${ms}`), now + ms);
    expect(refTimers()).toBe(before); // its one timer is unref'd: it never keeps a process alive
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(order).toEqual([...delays].sort((a, b) => a - b).map((ms) => `t${ms}`));
    expect(heap.size).toBe(0);
  });

  test('rescheduling replaces the earlier entry; cancel removes it', async () => {
    const heap = new TimerHeap();
    const { order, task } = recorder();
    const moved = task('moved');
    const cancelled = task('cancelled');
    heap.schedule(moved, Date.now() + 10);
    heap.schedule(cancelled, Date.now() + 20);
    heap.schedule(moved, Date.now() + 40);
    heap.cancel(cancelled);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(order).toEqual(['moved']);
  });

  test('stop() drops everything and refuses new work', async () => {
    const heap = new TimerHeap();
    const { order, task } = recorder();
    heap.schedule(task('a'), Date.now() + 5);
    heap.stop();
    heap.schedule(task('b'), Date.now() + 5);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(order).toEqual([]);
    expect(heap.size).toBe(0);
  });
});
