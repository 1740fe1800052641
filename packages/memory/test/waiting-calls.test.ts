import { within } from '@holdfast/test-harness/helpers';
import { expect, test } from 'vitest';
import { createMemoryProvider, MemoryStore } from '../src/index.js';

const STEP_MS = 5000;

test('waitingCalls() counts the acquires and observers waiting in the store, and drops them when they end', async () => {
  const store = new MemoryStore();
  const [a, b] = [createMemoryProvider({ store }), createMemoryProvider({ store })];
  try {
    const lock = await a.acquire('held');
    expect(store.waitingCalls()).toBe(0);
    const stop = new AbortController();
    const observer = b.observe('held', { signal: stop.signal });
    expect((await within(observer.next(), STEP_MS, 'observe() reports the holder')).value?.token).toBe(lock.token);
    const waiting = b.acquire('held', { waitMs: 30_000 });
    // Both wait on the store from the same tick as they start: the observer for a release, the acquire for its turn.
    await within(
      (async () => {
        while (store.waitingCalls() < 2) await new Promise((resolve) => setImmediate(resolve));
      })(),
      STEP_MS,
      'the observer and the acquire wait in the store',
    );
    expect(store.waitingCalls()).toBe(2);
    stop.abort();
    await within(observer.next(), STEP_MS, 'observe() ends when its signal aborts');
    expect(store.waitingCalls()).toBe(1);
    await lock.release();
    const second = await within(waiting, STEP_MS, 'the waiting acquire is granted');
    expect(store.waitingCalls()).toBe(0);
    await second.release();
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
