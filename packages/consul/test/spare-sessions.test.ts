import { randomBytes } from 'node:crypto';
import type { LockProvider, Semaphore } from '@holdfast/core';
import { until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { SEMAPHORE_SESSION_NAME } from '../src/constants.js';
import { ConsulHttp } from '../src/consul-http.js';
import { createConsulProvider } from '../src/index.js';
import { createSession } from '../src/session.js';
import { OwnSession, SpareSessions } from '../src/sessions.js';

const consul = await useBackend('consul');
const CALL_MS = 5000;

describe.skipIf(!consul.url)('spare slot sessions: reused by the next attempt, never left behind', () => {
  const url = consul.url?.replace('consul://', 'http://') ?? '';
  const providers: LockProvider[] = [];
  const https: ConsulHttp[] = [];
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((locks) => locks.close()));
    for (const http of https.splice(0)) http.close();
  });
  /** Sessions on the agent with this lock-delay, which only this test's sessions carry. */
  const sessionsWithLockDelay = async (lockDelayMs: number): Promise<string[]> => {
    const response = await fetch(`${url}/v1/session/list`, { signal: AbortSignal.timeout(CALL_MS) });
    const sessions = (await response.json()) as { ID: string; Name: string; LockDelay: number }[];
    return sessions.filter((session) => session.LockDelay === lockDelayMs * 1e6).map((session) => session.ID);
  };

  test('a kept session is handed to the next attempt of its TTL, not another; close destroys what is left', async () => {
    const lockDelayMs = 1_000 + Math.floor(Math.random() * 1000);
    const http = new ConsulHttp({ baseUrl: url });
    https.push(http);
    const make = async (ttlMs: number): Promise<OwnSession> => {
      const spec = { ttlMs, lockDelayMs, behavior: 'delete', name: SEMAPHORE_SESSION_NAME } as const;
      const id = await within(createSession(http, spec, AbortSignal.timeout(CALL_MS)), CALL_MS, 'session create answers');
      const renewal = { createdAt: Date.now(), callTimeoutMs: CALL_MS, lockDelayMs };
      return new OwnSession(http, id, ttlMs, SEMAPHORE_SESSION_NAME, renewal, () => AbortSignal.timeout(CALL_MS));
    };
    const spares = new SpareSessions();
    const [first, second] = [await make(10_000), await make(12_000)];
    spares.keep(first);
    spares.keep(second);
    expect(spares.take(11_000), 'a spare of another session TTL was handed out').toBeUndefined();
    expect(spares.take(10_000), 'the kept session was not handed to the next attempt').toBe(first);
    expect(spares.take(10_000), 'one spare was handed out twice').toBeUndefined();
    expect((await sessionsWithLockDelay(lockDelayMs)).sort()).toEqual([first.id, second.id].sort());
    await within(spares.close(AbortSignal.timeout(CALL_MS)), CALL_MS, 'close answers');
    expect(await sessionsWithLockDelay(lockDelayMs), 'close left the spare alive, or destroyed the one handed out').toEqual([first.id]);
    spares.keep(first);
    await until(async () => (await sessionsWithLockDelay(lockDelayMs)).length === 0, CALL_MS, 'a session kept after close is destroyed');
  });

  test('after slot contention, closing the providers leaves none of their slot sessions on the agent', async () => {
    const lockDelayMs = 2_000 + Math.floor(Math.random() * 1000);
    const key = `spares-${randomBytes(4).toString('hex')}`;
    const semaphores: Semaphore[] = Array.from({ length: 4 }, () => {
      const locks = createConsulProvider({ url, prefix: 'holdfast-spares', lockDelayMs });
      providers.push(locks);
      return locks.semaphore(key, 1);
    });
    let grants = 0;
    const worker = async (semaphore: Semaphore): Promise<void> => {
      while (grants < 30) {
        const slot = await semaphore.acquire({ waitMs: 10_000 });
        grants++;
        await new Promise((resolve) => setTimeout(resolve, 5));
        await slot.release();
      }
    };
    await within(Promise.all(semaphores.flatMap((semaphore) => [worker(semaphore), worker(semaphore)])), 30_000, '30 slot grants');
    expect(grants, 'the workers stopped early').toBeGreaterThanOrEqual(30);
    await within(Promise.all(providers.splice(0).map((locks) => locks.close())), 10_000, 'close answers');
    expect(await sessionsWithLockDelay(lockDelayMs), 'slot sessions outlived their providers').toEqual([]);
  });
});
