import { randomBytes } from 'node:crypto';
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { abortedWithin } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';

const consul = await useBackend('consul');

describe.skipIf(!consul.url)('a lost handle proves its exact grant, not just the shared session', () => {
  const providers: LockProvider[] = [];
  const provider = (sessionMode: 'shared' | 'per-lock' = 'shared'): LockProvider => {
    const created = createConsulProvider({
      url: consul.url!.replace('consul://', 'http://'),
      prefix: 'holdfast-exact',
      lockDelayMs: 1000,
      sessionMode,
    });
    providers.push(created);
    return created;
  };
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
  });

  test('A lost by a forced release, B taken by the same provider: A.release() leaves B held', async () => {
    const p = provider();
    const admin = provider();
    const third = provider();
    const key = `k-${randomBytes(4).toString('hex')}`;
    const a = (await p.tryAcquire(key))!;
    expect(a).not.toBeNull();
    const grantA = (await admin.inspect(key))!.details!['lockId'];
    expect(await admin.forceRelease(key)).toBe(true);
    await abortedWithin(a.signal, 5000, 'A told it lost the lock');
    expect((a.signal.reason as { code?: string }).code).toBe(ErrorCode.Lost);

    const b = (await p.tryAcquire(key))!;
    expect(b).not.toBeNull();
    expect(b.token).toBeGreaterThan(a.token);
    // Same provider, same shared session: only the grant's ModifyIndex / lockId tells A from B.
    const grantB = (await admin.inspect(key))!.details!['lockId'];
    expect(grantB).not.toBe(grantA);

    await a.release();
    expect(await third.tryAcquire(key)).toBeNull();
    expect(b.signal.aborted).toBe(false);
    expect(await b.isHeld()).toBe(true);
    expect((await admin.inspect(key))!.details!['lockId']).toBe(grantB);
    await b.release();
    expect(await third.tryAcquire(key)).not.toBeNull();
  });
});
