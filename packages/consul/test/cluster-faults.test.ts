import { randomBytes } from 'node:crypto';
import { ErrorCode, type Lock, type LockProvider } from '@holdfast/core';
import { FencedResource } from '@holdfast/test-harness';
import { lostWithin } from '@holdfast/test-harness/helpers';
import { type ConsulCluster, startConsulCluster } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';

const missing = await needLocalBinary('consul');

/** Writes `lock`'s token to the resource every 100 ms until its signal aborts; records every answer. */
function keepWriting(resource: FencedResource, lock: Lock, who: string, rejected: string[]): () => void {
  const timer = setInterval(() => {
    if (lock.signal.aborted) return;
    if (!resource.write(lock.token, who)) rejected.push(`${who} (token ${lock.token}) while it believed it held ${lock.key}`);
  }, 100);
  return () => clearInterval(timer);
}

describe.skipIf(missing !== null)('3-server Consul cluster: the leader is killed while locks are held and waited for', () => {
  let cluster: ConsulCluster;
  const providers: LockProvider[] = [];
  beforeAll(async () => {
    cluster = await startConsulCluster(3);
  }, 120_000);
  afterAll(async () => {
    await Promise.allSettled(providers.map((p) => p.close()));
    await cluster?.stop();
  }, 60_000);

  test('no lock is granted twice (fenced), holders keep their lock or are told, waiters get every key', async () => {
    const leader = await cluster.leaderIndex();
    const [followerA, followerB] = [0, 1, 2].filter((i) => i !== leader) as [number, number];
    const prefix = `faults-${randomBytes(4).toString('hex')}`;
    const make = (member: number): LockProvider => {
      const provider = createConsulProvider({ url: cluster.httpUrls[member]!, prefix, lockDelayMs: 1000 });
      providers.push(provider);
      return provider;
    };
    const onLeader = make(leader);
    const onFollower = make(followerA);
    const waiterSide = make(followerB);
    const keys = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];
    const resources = new Map(keys.map((key) => [key, new FencedResource()]));
    const rejected: string[] = [];
    const stops: (() => void)[] = [];

    const holders = new Map<string, Lock>();
    for (const [i, key] of keys.entries()) {
      const lock = await (i < 3 ? onLeader : onFollower).tryAcquire(key, { ttlMs: 20_000 });
      expect(lock, key).not.toBeNull();
      holders.set(key, lock!);
      stops.push(keepWriting(resources.get(key)!, lock!, `holder of ${key}`, rejected));
    }
    const waiterRejected: string[] = [];
    const waiters = keys.map((key) =>
      waiterSide.acquire(key, { waitMs: 110_000, ttlMs: 20_000 }).then((lock) => {
        // The new holder's first fenced write must be accepted: its token is above every earlier one.
        if (!resources.get(key)!.write(lock.token, `waiter of ${key}`)) waiterRejected.push(key);
        return lock;
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 500));

    const killedAt = Date.now();
    const toldAfter = new Map<string, number>();
    for (const [key, lock] of holders)
      lock.signal.addEventListener(
        'abort',
        () => {
          if ((lock.signal.reason as { code?: string }).code === ErrorCode.Lost) toldAfter.set(key, Date.now() - killedAt);
        },
        { once: true },
      );
    const acquiredAfter = new Map<string, number>();
    waiters.forEach(
      (waiter, i) =>
        void waiter.then(
          () => acquiredAfter.set(keys[i]!, Date.now() - killedAt),
          () => undefined,
        ),
    );
    await cluster.kill(leader);
    const newLeader = await cluster.waitForLeader(60_000);
    expect(newLeader).not.toBe(leader);

    // Holders behind the dead agent cannot renew or monitor: they must be told, well before a waiter could overlap for long.
    for (const key of keys.slice(0, 3)) {
      const lock = holders.get(key)!;
      await lostWithin(lock, 40_000, `${key}: holder on the dead agent is told`);
      expect((lock.signal.reason as { code?: string }).code).toBe(ErrorCode.Lost);
    }
    // Holders on a live follower either still hold (and Consul agrees) or were told.
    for (const key of keys.slice(3)) {
      const lock = holders.get(key)!;
      if (lock.signal.aborted) expect((lock.signal.reason as { code?: string }).code).toBe(ErrorCode.Lost);
      else {
        expect(await lock.isHeld()).toBe(true);
        await lock.release();
      }
    }
    const acquired = await Promise.all(waiters);
    for (const [i, lock] of acquired.entries()) {
      const key = keys[i]!;
      expect(lock.token, key).toBeGreaterThan(holders.get(key)!.token);
      expect(await lock.isHeld()).toBe(true);
    }
    for (const stop of stops) stop();
    expect(waiterRejected).toEqual([]);
    // Stale holders' writes after the takeover were refused by the fence; none got through out of order.
    for (const [key, resource] of resources) {
      const tokens = resource.writes.map((w) => w.token);
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]! >= tokens[i - 1]!, key).toBe(true);
      expect(resource.writes.at(-1)?.value, key).toBe(`waiter of ${key}`);
    }
    console.info(
      `[consul faults] stale writes refused by the fence: ${rejected.length}; ms after the kill: told lost ${JSON.stringify(Object.fromEntries(toldAfter))}, waiter acquired ${JSON.stringify(Object.fromEntries(acquiredAfter))}`,
    );
    await Promise.all(acquired.map((lock) => lock.release()));
  }, 180_000);
});
