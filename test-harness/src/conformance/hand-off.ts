import { ErrorCode, type Lock, type LockProof, type LockProvider } from '@holdfast/core';
import { expect, type TestContext, test } from 'vitest';
import { codeOf, rejection } from '../helpers/index.js';
import type { CaseFactory } from './suite-types.js';
import { type CaseContext, delay, skipBecause } from './support.js';

/** Skips the case (with the reason) where the backend's locks cannot move; true when they can. */
function canMove(t: TestContext, c: CaseContext, provider: LockProvider): boolean {
  const { renewal, noHandOff } = provider.capabilities;
  if (noHandOff !== undefined || renewal !== 'per-lock') {
    skipBecause(t, `${c.target.name} cannot hand locks off: ${noHandOff ?? 'a session or ping keeps them'}`);
    return false;
  }
  return true;
}

export function handOffCases(cases: CaseFactory): void {
  test('94. a lock handed off (handOff) is resumed by another provider with the same token and owner, renewed by it past its lease, and released by it; the old handle stops (signal, held()) and its close() leaves the lock', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const other = await c.provider();
    if (!canMove(t, c, a)) return;
    const key = c.key('handed');
    const ttlMs = c.timing.shortTtlMs;
    const lock = await c.within('acquire answers', a.acquire(key, { ttlMs, waitMs: 0, reason: 'web request' }));
    const proof: LockProof = lock.handOff();
    expect(codeOf(lock.signal.reason), "the handing handle's signal did not abort as handed off").toBe(ErrorCode.HandedOff);
    expect(
      a.held().map((info) => info.key),
      'the handing provider still counts the lock as its own',
    ).not.toContain(key);
    await c.within('close of the handing provider answers', a.close());
    const resumed = await c.within('resume answers', b.resume(JSON.stringify(proof)));
    expect(resumed.token, 'the resumed lock has another fencing token').toBe(lock.token);
    expect(resumed.owner, 'the resumed lock has another owner').toBe(lock.owner);
    expect(resumed.reason).toBe('web request');
    // Two leases long: only the new holder's renewal keeps it.
    await delay(2 * ttlMs);
    expect(
      resumed.signal.aborted ? String(resumed.signal.reason) : 'held',
      'the resumed lock was lost although its new holder renews it',
    ).toBe('held');
    expect((await c.within('inspect answers', other.inspect(key)))?.token, 'the resumed lock is not held on the backend').toBe(lock.token);
    expect(await c.within('tryAcquire answers', other.tryAcquire(key)), 'another instance took a resumed lock').toBeNull();
    expect(b.held().map((info) => info.key)).toContain(key);
    await c.within('release of the resumed lock answers', resumed.release());
    expect(await c.within('inspect answers', other.inspect(key)), 'releasing the resumed lock left the key held').toBeNull();
  });

  test('95. resume is owner-checked: a proof of a lock released, force-released or since granted to another is a LockLostError that leaves the holder alone; a forged token too; a malformed proof is an InvalidArgumentError', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    if (!canMove(t, c, a)) return;
    const admin = await c.provider();
    const key = c.key('stale-proof');
    const released = await c.within('acquire answers', a.acquire(key, { waitMs: 0 }));
    const releasedProof = released.toJSON();
    await c.within('release answers', released.release());
    expect(codeOf(await c.within('resume answers', rejection(b.resume(releasedProof)))), 'a released lock was resumed').toBe(
      ErrorCode.Lost,
    );
    const forced = await c.within('acquire answers', a.acquire(key, { waitMs: 0 }));
    const forcedProof = forced.handOff();
    expect(await c.within('forceRelease answers', admin.forceRelease(key))).toBe(true);
    const holder: Lock = await c.within('acquire answers', admin.acquire(key, { waitMs: 0 }));
    for (const [what, proof] of [
      ['released', releasedProof],
      ['force-released, then granted to another', forcedProof],
    ] as const) {
      const error = await c.within('resume answers', rejection(b.resume(proof)));
      expect(codeOf(error), `a ${what} lock was resumed`).toBe(ErrorCode.Lost);
    }
    const live = holder.toJSON();
    const forged = { ...live, token: String(holder.token + 1n) };
    expect(codeOf(await c.within('resume answers', rejection(b.resume(forged)))), 'a proof with a forged token was resumed').toBe(
      ErrorCode.Lost,
    );
    expect(holder.signal.aborted, "a stale or forged resume ended the holder's lock").toBe(false);
    expect((await c.within('inspect answers', admin.inspect(key)))?.token, 'a stale resume took the key').toBe(holder.token);
    for (const bad of [
      'not json',
      '{}',
      { ...live, v: 2 },
      { ...live, backend: 'elsewhere' },
      { ...live, token: '-1' },
      { ...live, key: '' },
    ]) {
      const error = await c.within('resume answers', rejection(b.resume(bad as LockProof)));
      expect(codeOf(error), `resume(${JSON.stringify(bad)}) is not an InvalidArgumentError`).toBe(ErrorCode.InvalidArgument);
    }
    await c.within('release answers', holder.release());
  });
}
