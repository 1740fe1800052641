import type { Lock, LockProvider } from '@holdfast/core';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll, describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { type RedisProcess, startRedisProcess } from './redis-process.js';

// Contenders loop acquire -> hold -> release while the server is killed and restarted without
// persistence again and again: whenever a lock is granted, every earlier holder of that key must
// already have been told, and tokens must keep increasing.

const missing = await needLocalBinary('redis-server');
const server: RedisProcess | null = missing ? null : await startRedisProcess();
afterAll(() => server?.stop(), 30_000);

const RESTARTS = 5;
const CONTENDERS = 4;
const KEYS = [`churn/${process.pid}/a`, `churn/${process.pid}/b`];

describe.skipIf(!server)('a server restarted again and again under contention', { timeout: 60_000 }, () => {
  test(`${RESTARTS} restarts: no grant while an earlier holder of the key still believes it holds it; tokens increase`, async () => {
    const providers: LockProvider[] = Array.from({ length: CONTENDERS }, () => createRedisProvider({ url: server!.url }));
    const live = new Map<string, Set<Lock>>(KEYS.map((key) => [key, new Set()]));
    const lastToken = new Map<string, bigint>();
    let grants = 0;
    let lostWhileHeld = 0;
    const overlaps: string[] = [];
    const regressions: string[] = [];
    let stop = false;

    const contend = async (provider: LockProvider, index: number): Promise<void> => {
      for (let round = 0; !stop; round++) {
        const key = KEYS[(index + round) % KEYS.length]!;
        const lock = await provider.acquire(key, { waitMs: 3000, ttlMs: 5000 }).catch(() => undefined);
        if (!lock) continue;
        grants++;
        for (const other of live.get(key)!) {
          if (!other.signal.aborted) overlaps.push(`${key}: token ${lock.token} granted while token ${other.token} was held`);
        }
        if (lock.token <= (lastToken.get(key) ?? -1n)) regressions.push(`${key}: ${lock.token} after ${lastToken.get(key)}`);
        lastToken.set(key, lock.token);
        live.get(key)!.add(lock);
        // Holds longer than a restart takes, so a holder the restart did not reach would overlap its successor.
        await new Promise((resolve) => setTimeout(resolve, 200 + Math.random() * 300));
        if (lock.signal.aborted) lostWhileHeld++;
        live.get(key)!.delete(lock);
        await lock.release().catch(() => undefined);
      }
    };

    const running = providers.map((provider, index) => contend(provider, index));
    try {
      for (let restart = 0; restart < RESTARTS; restart++) {
        await new Promise((resolve) => setTimeout(resolve, 500 + Math.random() * 400));
        await server!.restart();
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      stop = true;
      await Promise.all(running);
      await Promise.all(providers.map((provider) => provider.close()));
    }
    expect(overlaps).toEqual([]);
    expect(regressions).toEqual([]);
    // The restarts really hit holders, and the locks kept moving between them.
    expect(lostWhileHeld).toBeGreaterThan(0);
    expect(grants).toBeGreaterThan(15);
  });
});
