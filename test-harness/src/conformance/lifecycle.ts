import { ErrorCode, type LockProvider, MAX_REASON_LENGTH } from '@holdfast/core';
import { expect, test } from 'vitest';
import { codeOf, elapsed, rejection } from '../helpers/index.js';
import { BAD_KEYS } from './bad-input.js';
import type { CaseFactory } from './suite-types.js';
import type { CaseContext } from './support.js';
import { delay, skipBecause } from './support.js';

async function expectInvalidArguments(c: CaseContext, locks: LockProvider, key: string): Promise<void> {
  const minTtl = locks.capabilities.minTtlMs;
  const badCalls: [string, () => Promise<unknown>][] = [
    ['empty key', () => locks.tryAcquire('')],
    ['number key', () => locks.tryAcquire(42 as unknown as string)],
    ['null key', () => locks.acquire(null as unknown as string)],
    ['undefined key to inspect', () => locks.inspect(undefined as unknown as string)],
    ['ttl 0', () => locks.tryAcquire(key, { ttlMs: 0 })],
    ['negative ttl', () => locks.tryAcquire(key, { ttlMs: -1 })],
    ['NaN ttl', () => locks.acquire(key, { ttlMs: Number.NaN })],
    ['infinite ttl', () => locks.tryAcquire(key, { ttlMs: Infinity })],
    ['fractional ttl', () => locks.tryAcquire(key, { ttlMs: minTtl + 0.5 })],
    ['ttl above the backend maximum', () => locks.tryAcquire(key, { ttlMs: locks.capabilities.maxTtlMs + 1 })],
    ['negative wait', () => locks.acquire(key, { waitMs: -1 })],
    ['NaN wait', () => locks.acquire(key, { waitMs: Number.NaN })],
    ['non-string reason', () => locks.tryAcquire(key, { reason: 7 as unknown as string })],
    ['over-long reason', () => locks.tryAcquire(key, { reason: 'r'.repeat(MAX_REASON_LENGTH + 1) })],
    ['over-long reason to acquire', () => locks.acquire(key, { reason: 'r'.repeat(MAX_REASON_LENGTH + 1), waitMs: 0 })],
    ['non-boolean autoRenew', () => locks.tryAcquire(key, { autoRenew: 'yes' as unknown as boolean })],
    ['options not an object', () => locks.tryAcquire(key, 'fast' as never)],
    ['empty key to forceRelease', () => locks.forceRelease('')],
    ['number key to forceRelease', () => locks.forceRelease(7 as unknown as string)],
  ];
  for (const [name, bad] of BAD_KEYS(key)) {
    badCalls.push([`key with ${name} to inspect`, () => locks.inspect(bad)]);
    badCalls.push([`key with ${name} to forceRelease`, () => locks.forceRelease(bad)]);
  }
  for (const [name, call] of badCalls) {
    const error = await c.within(`bad input (${name}) is answered`, rejection(call(), `bad input (${name})`));
    expect(codeOf(error), `bad input (${name}) was not rejected with an InvalidArgumentError`).toBe(ErrorCode.InvalidArgument);
  }
}

export function lifecycleCases(cases: CaseFactory): void {
  test('28b. a ttl below the backend minimum is raised to it (one TTL rule on every backend), and expiresAt says so', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const minTtl = locks.capabilities.minTtlMs;
    if (minTtl <= 1) return skipBecause(t, 'the backend accepts any positive TTL');
    const before = Date.now();
    const lock = await c.within('tryAcquire with a short ttl answers', locks.tryAcquire(c.key(), { ttlMs: Math.max(1, minTtl - 1) }));
    expect(lock, 'a ttl below the minimum was not granted on a free key').not.toBeNull();
    if (lock!.expiresAt !== null) {
      expect(lock!.expiresAt.getTime(), 'expiresAt does not show the raised lease').toBeGreaterThanOrEqual(before + minTtl - 1);
    }
    await c.within('release answers', lock!.release());
  });

  test('28. invalid arguments are rejected with typed errors before the backend is touched; nothing leaks', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const key = c.key();
    await expectInvalidArguments(c, locks, key);
    expect(await c.within('inspect answers', locks.inspect(key)), 'a rejected call took the key').toBeNull();
    const held = await c.within('tryAcquire answers', locks.tryAcquire(key));
    for (const ttl of [-5, 0, Number.NaN, 1.5, locks.capabilities.maxTtlMs + 1]) {
      const error = await c.within('extend with a bad ttl answers', rejection(held!.extend(ttl), `extend(${ttl})`));
      expect(codeOf(error), `extend(${ttl}) was not rejected with an InvalidArgumentError`).toBe(ErrorCode.InvalidArgument);
    }
    expect(await c.within('isHeld answers', held!.isHeld()), 'a rejected extend lost the lock').toBe(true);
    if (c.target.createUnreachableProvider) {
      // Against a dead backend, an InvalidArgument (not a backend error) proves nothing was sent.
      const unreachable = await c.within('createUnreachableProvider() answers', Promise.resolve(c.target.createUnreachableProvider()));
      try {
        await expectInvalidArguments(c, unreachable, key);
      } finally {
        await c.within('close of the unreachable provider answers', unreachable.close()).catch(() => undefined);
      }
    }
  });

  test('29. a closed provider refuses work with a typed error; close() releases its locks and cancels its waiters', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key('held');
    const busy = c.key('busy');
    const lock = await c.within('tryAcquire answers', a.tryAcquire(key));
    await c.within('tryAcquire answers', b.tryAcquire(busy));
    const waiting = rejection(a.acquire(busy, { waitMs: 60_000 }));
    // Inherent: nothing tells that the waiter is parked; close() must cancel it either way.
    await delay(100);
    await c.within('close() finishes', a.close());
    expect(codeOf(await c.within('close() cancels a waiter', waiting, c.timing.slackMs)), 'a waiter cancelled by close()').toBe(
      ErrorCode.ProviderClosed,
    );
    expect(codeOf(lock!.signal.reason), 'close() did not release a held lock').toBe(ErrorCode.Released);
    expect(await c.within('tryAcquire answers', b.tryAcquire(key)), 'close() left its lock held').not.toBeNull();
    for (const [name, call] of [
      ['tryAcquire', () => a.tryAcquire(c.key())],
      ['acquire', () => a.acquire(c.key())],
      ['inspect', () => a.inspect(key)],
      ['forceRelease', () => a.forceRelease(key)],
    ] as const) {
      expect(codeOf(await c.within(`${name} on a closed provider answers`, rejection(call(), name))), `${name} on a closed provider`).toBe(
        ErrorCode.ProviderClosed,
      );
    }
    await c.within('a second close() finishes', a.close());
  });

  test("30. close() leaves no timers or sockets behind, ref'd or unref'd, counted from before the first provider existed", async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const other = await c.provider();
    await c.within('tryAcquire answers', locks.tryAcquire(c.key(), { ttlMs: c.timing.shortTtlMs }));
    await c.within('tryAcquire answers', locks.tryAcquire(c.key(), { ttlMs: c.timing.shortTtlMs, autoRenew: false }));
    const busy = c.key('busy');
    expect(await c.within('tryAcquire answers', other.tryAcquire(busy))).not.toBeNull();
    const waiting = rejection(locks.acquire(busy, { waitMs: 60_000 }));
    // Inherent: renewals and the waiter must be under way when close() runs.
    await delay(c.timing.shortTtlMs / 2);
    await c.within('close() finishes', locks.close());
    await c.within('close() cancels a waiter', waiting);
    await c.within('close() finishes', other.close());
    // Sockets and libraries may need a moment to wind down (ioredis arms a 2 s timer on disconnect,
    // also for a provider closed in an earlier case); a leaked timer never does.
    const deadline = Date.now() + 2000 + 2 * c.timing.slackMs;
    const leaking = (): boolean => c.leaks.pending().length > 0 || c.leaks.extraRefTimers() > 0 || c.leaks.extraHandles().length > 0;
    while (leaking() && Date.now() < deadline) await delay(50);
    expect(c.leaks.pending(), 'timers still pending after every provider of the suite was closed').toEqual([]);
    expect(c.leaks.extraRefTimers(), "more ref'd timers than before the first provider existed").toBeLessThanOrEqual(0);
    expect(c.leaks.extraHandles(), 'sockets still open after every provider of the suite was closed').toEqual([]);
  });

  test('31. an unreachable backend fails fast with a typed backend error, distinguishable from busy', async (t) => {
    const c = cases(t);
    const create = c.target.createUnreachableProvider;
    if (!create) return skipBecause(t, `${c.target.name} provides no unreachable-backend fixture`);
    const unreachable = await c.within('createUnreachableProvider() answers', Promise.resolve(create.call(c.target)));
    const bound = c.timing.unreachableMs;
    try {
      for (const [name, call] of [
        ['tryAcquire', () => unreachable.tryAcquire(c.key())],
        ['inspect', () => unreachable.inspect(c.key())],
      ] as const) {
        const tried = await c.within(
          `${name} against an unreachable backend answers`,
          elapsed(() => rejection(call(), name)),
          bound + c.timing.slackMs,
        );
        expect(codeOf(tried.value), `${name} against an unreachable backend is not a BackendError`).toBe(ErrorCode.Backend);
        expect(tried.ms, `${name} against an unreachable backend took long to fail`).toBeLessThan(bound);
      }
      const waitMs = 500;
      const waited = await c.within(
        'acquire against an unreachable backend answers',
        elapsed(() => rejection(unreachable.acquire(c.key(), { waitMs }))),
        waitMs + bound + c.timing.slackMs,
      );
      expect(codeOf(waited.value), 'a waiting acquire against an unreachable backend is not a BackendError').toBe(ErrorCode.Backend);
      expect(waited.ms, 'a waiting acquire against an unreachable backend overran its wait').toBeLessThan(waitMs + bound);
    } finally {
      await c.within('close of the unreachable provider answers', unreachable.close(), c.timing.callMs).catch(() => undefined);
    }
  });

  test('48. `await using` releases a lock and closes a provider', async (t) => {
    const c = cases(t);
    const observer = await c.provider();
    const key = c.key();
    // Each block runs in a function of its own so that leaving it (the implicit dispose) is bounded too.
    const lockSignal = await c.within(
      'an `await using` block with a lock is left',
      (async () => {
        await using lock = await c.within('acquire answers', observer.acquire(key, { waitMs: 0 }));
        expect((await c.within('inspect answers', observer.inspect(key)))?.token).toBe(lock.token);
        return lock.signal;
      })(),
    );
    expect(codeOf(lockSignal.reason), 'leaving an `await using` block did not release the lock').toBe(ErrorCode.Released);
    expect(await c.within('inspect answers', observer.inspect(key)), 'leaving an `await using` block left the key held').toBeNull();
    const held = c.key('held-by-disposed');
    const { disposed, heldSignal } = await c.within(
      'an `await using` block with a provider is left',
      (async () => {
        await using provider = await c.within('createProvider() answers', Promise.resolve(c.target.createProvider()));
        const lock = await c.within('tryAcquire answers', provider.tryAcquire(held));
        expect(lock, 'tryAcquire of a free key returned no lock').not.toBeNull();
        return { disposed: provider as LockProvider, heldSignal: lock!.signal };
      })(),
    );
    expect(codeOf(heldSignal.reason), 'disposing a provider did not release its lock').toBe(ErrorCode.Released);
    expect(await c.within('inspect answers', observer.inspect(held)), 'disposing a provider left its lock held').toBeNull();
    expect(codeOf(await c.within('tryAcquire answers', rejection(disposed.tryAcquire(c.key())))), 'a disposed provider is not closed').toBe(
      ErrorCode.ProviderClosed,
    );
  });

  test('49. every provider instance has its own owner, carried by its locks', async (t) => {
    const c = cases(t);
    const providers = [await c.provider(), await c.provider(), await c.provider()];
    const owners = providers.map((provider) => provider.owner);
    for (const owner of owners)
      expect(typeof owner === 'string' && owner.length > 0, `owner ${JSON.stringify(owner)} is not a non-empty string`).toBe(true);
    expect(new Set(owners).size, `two provider instances share an owner: ${owners.join(', ')}`).toBe(owners.length);
    for (const provider of providers) {
      const key = c.key();
      const lock = await c.within('tryAcquire answers', provider.tryAcquire(key));
      expect(lock!.owner, "a lock does not carry its provider's owner").toBe(provider.owner);
      expect((await c.within('inspect answers', providers[0]!.inspect(key)))?.owner, "inspect does not show the holder's owner").toBe(
        provider.owner,
      );
    }
  });
}
