import { randomBytes } from 'node:crypto';
import type { LockProvider } from '@holdfast/core';
import { within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';

const consul = await useBackend('consul');
const CALL_MS = 5000;

describe.skipIf(!consul.url)('extend() of a slot that lapses unless extended', () => {
  const http = consul.url?.replace('consul://', 'http://') ?? '';
  const providers: LockProvider[] = [];
  const provider = (): LockProvider => {
    const created = createConsulProvider({ url: http, prefix: 'holdfast-slot-extend', lockDelayMs: 1000 });
    providers.push(created);
    return created;
  };
  const sessionTtl = async (id: string): Promise<string | null> => {
    const response = await fetch(`${http}/v1/session/info/${id}`, { signal: AbortSignal.timeout(CALL_MS) });
    const [info] = ((await response.json()) as { TTL: string }[] | null) ?? [];
    return info?.TTL ?? null;
  };
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((locks) => locks.close()));
  });

  test('with a longer TTL the slot moves to a session of that TTL in one transaction: same token, still one holder', async () => {
    const key = `s-${randomBytes(4).toString('hex')}`;
    const [locks, other] = [provider(), provider()];
    const semaphore = locks.semaphore(key, 1);
    const slot = await within(semaphore.tryAcquire({ ttlMs: 10_000, autoRenew: false }), CALL_MS, 'tryAcquire answers');
    expect(slot, 'a free slot was not granted').not.toBeNull();
    const [before] = await within(semaphore.holders(), CALL_MS, 'holders() answers');
    const oldSession = before!.details!['session'] as string;
    expect(await sessionTtl(oldSession), "the lapsing slot's session TTL").toBe('10000ms');

    await within(slot!.extend(60_000), CALL_MS, 'extend answers');
    const after = await within(semaphore.holders(), CALL_MS, 'holders() answers');
    expect(after, 'the move left the semaphore with another number of holders').toHaveLength(1);
    const newSession = after[0]!.details!['session'] as string;
    expect(newSession, 'the slot did not move to a new session').not.toBe(oldSession);
    expect(await sessionTtl(newSession), "the new session's TTL does not cover the new lease").toBe('30000ms');
    expect(await sessionTtl(oldSession), 'the old session outlived the move').toBeNull();
    expect(after[0]!.token, 'holders() no longer reports the slot token').toBe(slot!.token);
    expect(await within(slot!.isHeld(), CALL_MS, 'isHeld answers'), 'the moved slot is not held').toBe(true);
    expect(slot!.signal.aborted, 'the move was taken for a loss').toBe(false);
    expect(slot!.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 50_000);
    expect(
      await within(other.semaphore(key, 1).tryAcquire(), CALL_MS, 'tryAcquire answers'),
      'a full semaphore granted a slot during the move',
    ).toBeNull();
    await within(slot!.release(), CALL_MS, 'release answers');
    expect(
      await within(other.semaphore(key, 1).tryAcquire(), CALL_MS, 'tryAcquire answers'),
      'the released slot was not free',
    ).not.toBeNull();
  });
});
