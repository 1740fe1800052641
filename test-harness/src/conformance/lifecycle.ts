import { ErrorCode, type LockProvider } from '@holdfast/core';
import { expect, test } from 'vitest';
import type { CaseFactory } from './suite-types.js';
import { abortedWithin, delay, elapsed, rejection, skipBecause } from './support.js';
import { trackTimers } from './timer-tracker.js';

function codeOf(error: unknown): string | undefined {
  return (error as { code?: string } | null)?.code;
}

async function expectInvalidArguments(locks: LockProvider, key: string): Promise<void> {
  const minTtl = locks.capabilities.minTtlMs;
  const badCalls: [string, () => Promise<unknown>][] = [
    ['empty key', () => locks.tryAcquire('')],
    ['number key', () => locks.tryAcquire(42 as unknown as string)],
    ['null key', () => locks.acquire(null as unknown as string)],
    ['undefined key', () => locks.inspect(undefined as unknown as string)],
    ['ttl 0', () => locks.tryAcquire(key, { ttlMs: 0 })],
    ['negative ttl', () => locks.tryAcquire(key, { ttlMs: -1 })],
    ['NaN ttl', () => locks.acquire(key, { ttlMs: Number.NaN })],
    ['infinite ttl', () => locks.tryAcquire(key, { ttlMs: Infinity })],
    ['fractional ttl', () => locks.tryAcquire(key, { ttlMs: minTtl + 0.5 })],
    ['ttl below the backend minimum', () => locks.tryAcquire(key, { ttlMs: Math.max(1, minTtl - 1) })],
    ['ttl above the backend maximum', () => locks.tryAcquire(key, { ttlMs: locks.capabilities.maxTtlMs + 1 })],
    ['negative wait', () => locks.acquire(key, { waitMs: -1 })],
    ['NaN wait', () => locks.acquire(key, { waitMs: Number.NaN })],
    ['non-string reason', () => locks.tryAcquire(key, { reason: 7 as unknown as string })],
    ['options not an object', () => locks.tryAcquire(key, 'fast' as never)],
  ];
  if (minTtl <= 1) badCalls.splice(badCalls.findIndex(([name]) => name.startsWith('ttl below')), 1);
  for (const [name, call] of badCalls) {
    expect(codeOf(await rejection(call())), name).toBe(ErrorCode.InvalidArgument);
  }
}

export function lifecycleCases(cases: CaseFactory): void {
  test('28. invalid arguments are rejected with typed errors before the backend is touched; nothing leaks', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const key = c.key();
    await expectInvalidArguments(locks, key);
    expect(await locks.inspect(key)).toBeNull();
    const held = await locks.tryAcquire(key);
    expect(codeOf(await rejection(held!.extend(-5)))).toBe(ErrorCode.InvalidArgument);
    expect(await held!.isHeld()).toBe(true);
    if (c.target.createUnreachableProvider) {
      // Against a dead backend, an InvalidArgument (not a backend error) proves nothing was sent.
      const unreachable = await c.target.createUnreachableProvider();
      try {
        await expectInvalidArguments(unreachable, key);
      } finally {
        await unreachable.close().catch(() => undefined);
      }
    }
  });

  test('29. a closed provider refuses work with a typed error; close() releases its locks and cancels its waiters', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key('held');
    const busy = c.key('busy');
    const lock = await a.tryAcquire(key);
    await b.tryAcquire(busy);
    const waiting = rejection(a.acquire(busy, { waitMs: 60_000 }));
    await delay(100);
    await a.close();
    expect(codeOf(await waiting)).toBe(ErrorCode.ProviderClosed);
    expect(codeOf(lock!.signal.reason)).toBe(ErrorCode.Released);
    expect(await b.tryAcquire(key)).not.toBeNull();
    expect(codeOf(await rejection(a.tryAcquire(c.key())))).toBe(ErrorCode.ProviderClosed);
    expect(codeOf(await rejection(a.acquire(c.key())))).toBe(ErrorCode.ProviderClosed);
    expect(codeOf(await rejection(a.inspect(key)))).toBe(ErrorCode.ProviderClosed);
    await a.close();
  });

  test('30. close() leaves no timers behind, ref\'d or unref\'d', async (t) => {
    const c = cases(t);
    const refTimersBefore = activeTimers();
    const tracker = trackTimers();
    try {
      const locks = await c.target.createProvider();
      const other = await c.provider();
      await locks.tryAcquire(c.key(), { ttlMs: c.timing.shortTtlMs });
      await locks.tryAcquire(c.key(), { ttlMs: c.timing.shortTtlMs, autoRenew: false });
      const busy = c.key('busy');
      expect(await other.tryAcquire(busy)).not.toBeNull();
      const waiting = rejection(locks.acquire(busy, { waitMs: 60_000 }));
      await delay(c.timing.shortTtlMs / 2);
      await locks.close();
      await waiting;
      await other.close();
      // Sockets and libraries may need a moment to wind down; a leaked timer never does.
      const deadline = Date.now() + 2000;
      while ((tracker.pending().length > 0 || activeTimers() > refTimersBefore) && Date.now() < deadline) await delay(50);
      expect(tracker.pending(), 'timers still pending after close()').toEqual([]);
      expect(activeTimers()).toBeLessThanOrEqual(refTimersBefore);
    } finally {
      tracker.stop();
    }
  });

  test('31. an unreachable backend fails with a typed backend error, distinguishable from busy', async (t) => {
    const c = cases(t);
    const create = c.target.createUnreachableProvider;
    if (!create) return skipBecause(t, `${c.target.name} provides no unreachable-backend fixture`);
    const unreachable = await create.call(c.target);
    try {
      const tried = await elapsed(() => rejection(unreachable.tryAcquire(c.key())));
      expect(codeOf(tried.value)).toBe(ErrorCode.Backend);
      const waited = await rejection(unreachable.acquire(c.key(), { waitMs: 500 }));
      expect(codeOf(waited)).toBe(ErrorCode.Backend);
    } finally {
      await unreachable.close().catch(() => undefined);
    }
  });

  test('still-held locks keep their signal quiet while the provider is open', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const lock = await locks.tryAcquire(c.key());
    await expect(abortedWithin(lock!.signal, 200)).rejects.toThrow(/did not abort/);
  });
}

function activeTimers(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
}
