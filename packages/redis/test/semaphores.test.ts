import { ErrorCode, type Lock, type LockProvider } from '@holdfast/core';
import { codeOf, lostWithin, timed, until } from '@holdfast/test-harness/helpers';
import { type RedisSet, startRedisSet } from '@holdfast/test-harness/servers';
import { needLocalBinary, useBackend } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import { describe, expect, test } from 'vitest';
import { DEFAULT_PREFIX, type RedisProviderOptions } from '../src/index.js';
import { slotQuorum } from '../src/slot-quorum.js';
import { adminConnection, providersClosedAfterEach } from './fixture.js';
import { quorumUrl } from './quorum-url.js';

// Semaphores on one Redis server beside plain locks: what listing and inspection show, what a lock
// whose key became a semaphore is told, how holders learn of a forced release, and how many
// waiters a release of several slots wakes.

const redis = await useBackend('redis');
const set: RedisSet | null = (await needLocalBinary('redis-server')) ? null : await startRedisSet(3);
const raw = adminConnection(redis.url, async () => set?.stop());

const { open: openTracked } = providersClosedAfterEach();
const open = (options: Partial<RedisProviderOptions> = {}): LockProvider => openTracked({ url: redis.url!, ...options });
let keyCount = 0;
const newKey = (): string => `semaphores/${process.pid}/${Date.now()}-${++keyCount}`;

describe.skipIf(!redis.url)(`semaphores on one server (${redis.label})`, { timeout: 20_000 }, () => {
  test('list() and inspect() do not mistake a semaphore key for a lock; holders() shows its slots', async () => {
    for (const prefix of [undefined, '']) {
      const locks = open(prefix === undefined ? {} : { prefix });
      const base = newKey();
      const lock = await locks.tryAcquire(`${base}/lock`);
      const slots = locks.semaphore(`${base}/semaphore`, 2);
      const first = await slots.tryAcquire({ reason: 'first' });
      const second = await slots.tryAcquire();
      expect(first && second && lock).toBeTruthy();
      const listed = await locks.list({ prefix: base });
      expect(
        listed.map((info) => info.key),
        `prefix ${String(prefix)}: list() shows a semaphore`,
      ).toEqual([`${base}/lock`]);
      expect(await locks.inspect(`${base}/semaphore`), 'inspect() of a semaphore key').toBeNull();
      const holders = await slots.holders();
      expect(holders.map((holder) => [holder.owner, holder.token, holder.reason])).toEqual([
        [locks.owner, first!.token, 'first'],
        [locks.owner, second!.token, undefined],
      ]);
      expect(holders[0]!.details).toEqual({ limit: 2 });
      for (const holder of holders) expect(Math.abs(holder.expiresAt!.getTime() - (Date.now() + 30_000))).toBeLessThan(1000);
      await Promise.all([lock!.release(), first!.release(), second!.release()]);
    }
  });

  test('tokens increase across plain locks and slots of one key; a released semaphore leaves only the fence counter', async () => {
    const locks = open();
    const key = newKey();
    const lock = await locks.tryAcquire(key);
    await lock!.release();
    const slot = await locks.semaphore(key, 3).tryAcquire();
    expect(slot!.token).toBeGreaterThan(lock!.token);
    await slot!.release();
    const again = await locks.tryAcquire(key);
    expect(again!.token).toBeGreaterThan(slot!.token);
    await again!.release();
    expect([...(await raw!.keys(`holdfast:${key}*`)), ...(await raw!.keys(`{holdfast:${key}}*`))]).toEqual([`{holdfast:${key}}//fence`]);
  });

  test('a plain lock whose key was taken over by a semaphore is not held: extend and isHeld say so, with no backend error', async () => {
    const locks = open();
    const [extended, checked] = [newKey(), newKey()];
    const holders = [await locks.tryAcquire(extended), await locks.tryAcquire(checked)];
    const slots: Lock[] = [];
    for (const key of [extended, checked]) {
      // The lock key vanishes under its holder (an operator, a restart), and a semaphore takes the key.
      await raw!.del(`holdfast:${key}`);
      slots.push((await open().semaphore(key, 2).tryAcquire())!);
    }
    const refused = await holders[0]!.extend().catch((error: unknown) => error);
    expect(codeOf(refused)).toBe(ErrorCode.Lost);
    expect((refused as Error).message).toMatch(/the backend no longer has it/);
    expect(await holders[1]!.isHeld()).toBe(false);
    for (const slot of slots) expect(await slot.isHeld(), "the old lock's release freed a slot").toBe(true);
    await Promise.all(slots.map((slot) => slot.release()));
  });

  test('forceRelease tells every slot holder at once through the subscription, in providers that never waited too', async () => {
    const subscribers = async (): Promise<number> =>
      ((await raw!.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string).split('\n').filter(Boolean).length;
    const before = await subscribers();
    const [a, b, admin] = [open(), open(), open()];
    const key = newKey();
    const held: Lock[] = [];
    for (const locks of [a, a, b]) held.push((await locks.semaphore(key, 3).tryAcquire({ ttlMs: 60_000 }))!);
    const other = (await a.semaphore(`${key}/other`, 1).tryAcquire())!;
    // A slot grant opens its provider's subscription (two patterns); a message before it is active is missed.
    await until(async () => (await subscribers()) >= before + 2, 3000, 'both holders subscribe', { everyMs: 10 });
    // Renewals come every 20 s: a holder told within a second heard the message.
    const { ms, error } = await timed(
      Promise.all([admin.forceRelease(key), ...held.map((slot) => lostWithin(slot, 1000, 'a force-released slot holder is told'))]),
      3000,
      'forceRelease',
    );
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(1000);
    for (const slot of held) expect(String((slot.signal.reason as Error).message)).toMatch(/force-released/);
    expect(other.signal.aborted, "a forced release of one key ended another key's slot").toBe(false);
    expect(await a.semaphore(key, 3).holders()).toEqual([]);
    await other.release();
  });

  test('releases of several slots wake as many waiters of one provider, without waiting for a poll', async () => {
    const key = newKey();
    const holding = open();
    const held: Lock[] = [];
    for (let i = 0; i < 3; i++) held.push((await holding.semaphore(key, 3).tryAcquire({ ttlMs: 60_000 }))!);
    const waiting = open({ pollIntervalMs: 60_000 }).semaphore(key, 3);
    const waiters = [0, 1, 2].map(() => timed(waiting.acquire({ waitMs: 15_000 }), 16_000, 'a waiter'));
    // Let the waiters settle into their waits (each saw the key busy for another 60 s).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const releasedAt = Date.now();
    await Promise.all(held.map((slot) => slot.release()));
    const granted = await Promise.all(waiters);
    for (const waiter of granted) {
      expect(waiter.error).toBeUndefined();
      expect(waiter.value!.signal.aborted).toBe(false);
    }
    expect(Date.now() - releasedAt, 'a waiter was left to its poll').toBeLessThan(2000);
    await Promise.all(granted.map((waiter) => waiter.value!.release()));
  });
});

describe.skipIf(!set)('semaphores on a quorum of 3', () => {
  test('a slot of a semaphore of 1 is on a majority, of 2 on every node (more than nodes * limit / (limit + 1)); the capabilities say so', async () => {
    expect([1, 2, 3, 6].map((limit) => slotQuorum(3, limit))).toEqual([2, 3, 3, 3]);
    expect([1, 2, 3, 4].map((limit) => slotQuorum(5, limit))).toEqual([3, 4, 4, 5]);
    const url = quorumUrl(set!.urls);
    const locks = openTracked({ url });
    expect(locks.capabilities.semaphoreNeeds).toMatch(/nodes \* limit \/ \(limit \+ 1\)/);
    const nodesHolding = async (key: string): Promise<number> => {
      let holding = 0;
      for (const node of set!.urls) {
        const client = new Redis(node);
        try {
          if ((await client.zcard(`${DEFAULT_PREFIX}${key}`)) > 0) holding++;
        } finally {
          client.disconnect();
        }
      }
      return holding;
    };
    for (const [limit, nodes] of [
      [1, 2],
      [2, 3],
    ] as const) {
      const key = newKey();
      const slot = await locks.semaphore(key, limit).tryAcquire();
      expect(slot, `a free slot of a semaphore of ${limit}`).not.toBeNull();
      // The first `nodes` answers decide; every node is asked, so a slot lands on all 3 when all answer.
      expect(await nodesHolding(key), `nodes holding a slot of a semaphore of ${limit}`).toBeGreaterThanOrEqual(nodes);
      await slot!.release();
      await until(async () => (await nodesHolding(key)) === 0, 5000, 'the slot released on every node');
    }
  });
});
