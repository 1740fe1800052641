import { expect, test } from 'vitest';
import { takeOver } from './expiry.js';
import type { CaseFactory } from './suite-types.js';
import { skipBecause } from './support.js';

/** A resource that, like a fenced storage service, rejects writes carrying an older token. */
export class FencedResource {
  private highest = -1n;
  readonly writes: { token: bigint; value: string }[] = [];

  write(token: bigint, value: string): boolean {
    if (token < this.highest) return false;
    this.highest = token;
    this.writes.push({ token, value });
    return true;
  }
}

export function fencingCases(cases: CaseFactory): void {
  test.concurrent('25. tokens strictly increase per key across holders, releases, expiries and forced releases', async (t) => {
    const c = cases(t);
    if (c.capabilities.fencing !== 'strict') return skipBecause(t, `${c.target.name} declares fencing "${c.capabilities.fencing}"`);
    const [a, b] = await c.providers2();
    const key = c.key();
    const tokens: bigint[] = [];
    for (let round = 0; round < 4; round++) {
      const lock = await c.within('tryAcquire answers', (round % 2 ? b : a).tryAcquire(key));
      expect(lock, `round ${round}: a released key was refused`).not.toBeNull();
      tokens.push(lock!.token);
      await c.within('release answers', lock!.release());
    }
    const forced = await c.within('tryAcquire answers', a.tryAcquire(key));
    tokens.push(forced!.token);
    await c.within('forceRelease answers', b.forceRelease(key));
    const ttlMs = c.timing.shortTtlMs;
    const waitMs = c.timing.slackMs + c.timing.graceMs;
    const expiring = await c.within(
      'acquire after forceRelease answers',
      b.acquire(key, { ttlMs, autoRenew: false, waitMs }),
      waitMs + c.timing.slackMs,
    );
    tokens.push(expiring.token);
    tokens.push((await takeOver(c, a, key, ttlMs, 'a lapsed lock is taken over')).token);
    for (const token of tokens) expect(typeof token, 'a token is not a bigint').toBe('bigint');
    for (let i = 1; i < tokens.length; i++)
      expect(tokens[i]!, `grant ${i} did not get a higher token: ${tokens.join(',')}`).toBeGreaterThan(tokens[i - 1]!);
  });

  test.concurrent('26. a fenced resource never accepts a write from a holder whose lock was taken over', async (t) => {
    const c = cases(t);
    if (c.capabilities.fencing !== 'strict') return skipBecause(t, `${c.target.name} declares fencing "${c.capabilities.fencing}"`);
    const { b, key, ttlMs, lock: old } = await c.unrenewedLock();
    const resource = new FencedResource();
    expect(resource.write(old.token, 'old holder, first write')).toBe(true);
    const current = await takeOver(c, b, key, ttlMs, 'a lapsed lock is taken over');
    expect(resource.write(current.token, 'new holder'), "the new holder's token was refused as stale").toBe(true);
    expect(resource.write(old.token, 'old holder, stale write'), "a stale holder's write was accepted").toBe(false);
    expect(resource.writes.map((w) => w.value)).toEqual(['old holder, first write', 'new holder']);
  });

  test.concurrent('46. grants in a row to one instance get strictly increasing tokens', async (t) => {
    const c = cases(t);
    if (c.capabilities.fencing !== 'strict') return skipBecause(t, `${c.target.name} declares fencing "${c.capabilities.fencing}"`);
    const locks = await c.provider();
    const key = c.key();
    const tokens: bigint[] = [];
    for (let round = 0; round < 3; round++) {
      const lock = await c.within('tryAcquire answers', locks.tryAcquire(key));
      expect(lock, `round ${round}: a released key was refused`).not.toBeNull();
      tokens.push(lock!.token);
      await c.within('release answers', lock!.release());
    }
    const forced = await c.within('tryAcquire answers', locks.tryAcquire(key));
    tokens.push(forced!.token);
    expect(await c.within('forceRelease answers', locks.forceRelease(key))).toBe(true);
    const waitMs = c.timing.graceMs + c.timing.slackMs;
    const after = await c.within('the force-released key is granted again', locks.acquire(key, { waitMs }), waitMs + c.timing.slackMs);
    tokens.push(after.token);
    for (let i = 1; i < tokens.length; i++)
      expect(tokens[i]!, `grant ${i} of one instance did not get a higher token: ${tokens.join(',')}`).toBeGreaterThan(tokens[i - 1]!);
  });
}
