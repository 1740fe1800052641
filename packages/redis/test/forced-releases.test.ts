import { afterEach, describe, expect, test, vi } from 'vitest';
import { ForcedReleases, forcedSlotsIn, type SlotWatcher } from '../src/forced-releases.js';

// How a provider's held slots hear of a forced release: only those the message names, and slots that
// lapsed without a release are not kept for ever.

afterEach(() => {
  vi.useRealTimers();
});

function watcher(lockId: string, leaseEnd: number): SlotWatcher & { told: number } {
  return {
    lockId,
    leaseEnd,
    told: 0,
    forceReleased() {
      this.told++;
    },
  };
}

describe('forced releases of semaphore slots', () => {
  test('a message tells the named slots of its key once, and no other', () => {
    const forced = new ForcedReleases();
    const [a, b, other] = [watcher('a', Infinity), watcher('b', Infinity), watcher('a', Infinity)];
    forced.watch('key', a);
    forced.watch('key', b);
    forced.watch('other-key', other);
    expect(forcedSlotsIn('released')).toBeUndefined();
    expect(forcedSlotsIn('force-released')).toBeUndefined();
    forced.told('key', forcedSlotsIn('force-released a c')!);
    forced.told('key', ['a']);
    expect([a.told, b.told, other.told]).toEqual([1, 0, 0]);
  });

  test('a slot that lapsed without a release is dropped at the next sweep (ten seconds on)', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const forced = new ForcedReleases();
    const lapsing = watcher('lapsing', Date.now() + 1000);
    const kept = watcher('kept', Date.now() + 60_000);
    forced.watch('key', lapsing);
    forced.watch('key', kept);
    vi.setSystemTime(Date.now() + 10_001);
    forced.watch('key', watcher('new', Infinity));
    forced.told('key', ['lapsing', 'kept']);
    expect([lapsing.told, kept.told]).toEqual([0, 1]);
  });
});
