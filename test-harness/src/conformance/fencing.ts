import { expect, test } from 'vitest';
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
      const lock = await (round % 2 ? b : a).tryAcquire(key);
      tokens.push(lock!.token);
      await lock!.release();
    }
    const forced = await a.tryAcquire(key);
    tokens.push(forced!.token);
    await b.forceRelease(key);
    const ttlMs = c.timing.shortTtlMs;
    const expiring = await b.acquire(key, { ttlMs, autoRenew: false, waitMs: c.timing.slackMs + c.timing.graceMs });
    tokens.push(expiring.token);
    const after = await a.acquire(key, { waitMs: ttlMs + c.timing.graceMs + c.timing.slackMs * 2 });
    tokens.push(after.token);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]!, `grant ${i}: ${tokens.join(',')}`).toBeGreaterThan(tokens[i - 1]!);
  });

  test.concurrent('26. a fenced resource never accepts a write from a holder whose lock was taken over', async (t) => {
    const c = cases(t);
    if (c.capabilities.fencing !== 'strict') return skipBecause(t, `${c.target.name} declares fencing "${c.capabilities.fencing}"`);
    const [a, b] = await c.providers2();
    const key = c.key();
    const resource = new FencedResource();
    const ttlMs = c.timing.shortTtlMs;
    const old = await a.tryAcquire(key, { ttlMs, autoRenew: false });
    expect(resource.write(old!.token, 'old holder, first write')).toBe(true);
    const current = await b.acquire(key, { waitMs: ttlMs + c.timing.graceMs + c.timing.slackMs * 2 });
    expect(resource.write(current.token, 'new holder')).toBe(true);
    expect(resource.write(old!.token, 'old holder, stale write')).toBe(false);
    expect(resource.writes.map((w) => w.value)).toEqual(['old holder, first write', 'new holder']);
  });
}
