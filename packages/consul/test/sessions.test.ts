import { randomBytes } from 'node:crypto';
import { createLockProvider, type LockProvider } from '@holdfast/core';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';

const consul = await useBackend('consul');

describe.skipIf(!consul.url)('sessions: shared by default, per lock on request, moved on extend', () => {
  const http = consul.url?.replace('consul://', 'http://');
  const providers: LockProvider[] = [];
  const provider = async (query: string): Promise<LockProvider> => {
    const created = await createLockProvider(
      `${consul.url}?prefix=holdfast-sessions&${query.includes('lockDelay') ? query : `lockDelay=1s&${query}`}`,
    );
    providers.push(created);
    return created;
  };
  const sessionExists = async (id: string): Promise<boolean> =>
    ((await (await fetch(`${http}/v1/session/info/${id}`)).json()) as unknown[] | null)?.length === 1;
  const key = (): string => `s-${randomBytes(4).toString('hex')}`;
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
  });

  test('one session serves every auto-renewed lock of a provider; close destroys it', async () => {
    const locks = await provider('');
    const keys = [key(), key(), key()];
    for (const k of keys) expect(await locks.tryAcquire(k)).not.toBeNull();
    const sessions = new Set(await Promise.all(keys.map(async (k) => (await locks.inspect(k))!.details!['session'] as string)));
    expect(sessions.size).toBe(1);
    const [session] = sessions;
    const info = await locks.inspect(keys[0]!);
    expect(info!.details!['sessionName']).toBe('Consul API Lock');
    expect(info!.details!['lockDelayMs']).toBe(1000);
    await locks.close();
    expect(await sessionExists(session!)).toBe(false);
  });

  test('session=per-lock: one session per lock, destroyed with the lock', async () => {
    const locks = await provider('session=per-lock');
    const [a, b] = [key(), key()];
    const first = await locks.tryAcquire(a);
    await locks.tryAcquire(b);
    const sa = (await locks.inspect(a))!.details!['session'] as string;
    const sb = (await locks.inspect(b))!.details!['session'] as string;
    expect(sa).not.toBe(sb);
    await first!.release();
    expect(await sessionExists(sa)).toBe(false);
    expect(await sessionExists(sb)).toBe(true);
  });

  test('extend() of a non-renewed lock with a longer TTL moves it to a session with that TTL, atomically', async () => {
    const locks = await provider('');
    const k = key();
    const lock = await locks.tryAcquire(k, { ttlMs: 10_000, autoRenew: false });
    const before = (await locks.inspect(k))!.details!;
    expect(before['sessionTtl']).toBe('10000ms');
    await lock!.extend(60_000);
    const after = (await locks.inspect(k))!.details!;
    expect(after['session']).not.toBe(before['session']);
    expect(after['sessionTtl']).toBe('30000ms');
    expect(await sessionExists(before['session'] as string)).toBe(false);
    expect(await lock!.isHeld()).toBe(true);
    expect(lock!.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 50_000);
    const other = await provider('');
    expect(await other.tryAcquire(k)).toBeNull();
    await lock!.release();
    expect(await other.tryAcquire(k)).not.toBeNull();
  });

  test('inspect tells a lock-delay from a free key; the holder of an invalidated session is told', async () => {
    const locks = await provider('lockDelay=3s');
    const other = await provider('');
    const k = key();
    const lock = await locks.tryAcquire(k, { reason: 'lock-delay probe' });
    const session = (await locks.inspect(k))!.details!['session'] as string;
    await fetch(`${http}/v1/session/destroy/${session}`, { method: 'PUT' });
    const delayed = await other.inspect(k);
    expect(delayed?.details?.['lockDelay']).toBe(true);
    expect(delayed?.details?.['session']).toBeNull();
    expect(delayed?.owner).toBe(locks.owner);
    expect(await other.tryAcquire(k)).toBeNull();
    const taken = await other.acquire(k, { waitMs: 15_000 });
    expect((await other.inspect(k))?.details?.['lockDelay']).toBe(false);
    expect(taken.token).toBeGreaterThan(lock!.token);
    expect(lock!.signal.aborted).toBe(true);
    expect(lock!.signal.reason).toMatchObject({ code: 'HOLDFAST_LOST' });
  });
});
