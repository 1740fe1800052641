import { ErrorCode, type Lock } from '@holdfast/core';
import { lostWithin } from '@holdfast/test-harness/helpers';
import { type RedisSet, startRedisSet } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, test } from 'vitest';
import { providersClosedAfterEach } from './fixture.js';
import { quorumUrl } from './quorum-url.js';
import { type RedisProcess, startRedisProcess } from './redis-process.js';

// Servers restarted without persistence forget every key: the holder must hear about it before
// anybody else can be granted the lock again.

const missing = await needLocalBinary('redis-server');
const single: RedisProcess | null = missing ? null : await startRedisProcess();
const durable: RedisProcess | null = missing ? null : await startRedisProcess(['--appendonly', 'yes', '--appendfsync', 'always']);
const three: RedisSet | null = missing ? null : await startRedisSet(3);
afterAll(() => Promise.all([single?.stop(), durable?.stop(), three?.stop()]), 60_000);

let keyCount = 0;
const newKey = (): string => `restart/${process.pid}/${Date.now()}-${++keyCount}`;
const { open } = providersClosedAfterEach();

/** Resolves with the holder's signal state at the moment the waiter is granted. */
function holderAbortedWhenGranted(waiter: Promise<Lock>, holder: Lock): Promise<{ lock: Lock; holderAborted: boolean }> {
  return waiter.then((lock) => ({ lock, holderAborted: holder.signal.aborted }));
}

describe.skipIf(!single)('a single server restarted without persistence', { timeout: 30_000 }, () => {
  test('the holder is told at once, before a waiter in another provider is granted the forgotten key', async () => {
    const server = single!;
    const key = newKey();
    const holder = await open({ url: server.url }).tryAcquire(key, { ttlMs: 30_000 });
    expect(holder).not.toBeNull();
    // waitForBackend: these providers' first contact may meet the restart, and they are meant to wait for it.
    const waiter = holderAbortedWhenGranted(open({ url: server.url }).acquire(key, { waitMs: 15_000, waitForBackend: true }), holder!);
    const restartedAt = Date.now();
    await server.restart();
    // A provider that first connects after the restart has no connection to lose and races the waiter.
    const fresh = holderAbortedWhenGranted(open({ url: server.url }).acquire(key, { waitMs: 15_000, waitForBackend: true }), holder!);
    const first = await Promise.race([waiter.then((won) => ({ won, other: fresh })), fresh.then((won) => ({ won, other: waiter }))]);
    expect(first.won.holderAborted, 'holder still believed it held the lock when another was granted').toBe(true);
    expect(Date.now() - restartedAt, "the forgotten key was granted well before the holder's lease ended").toBeLessThan(15_000);
    await first.won.lock.release();
    const second = await first.other;
    expect(second.holderAborted).toBe(true);
    await second.lock.release();
    const reason = holder!.signal.reason as { code?: string; message?: string };
    expect(reason.code).toBe(ErrorCode.Lost);
    expect(reason.message).toMatch(/connection to redis 127\.0\.0\.1:\d+ dropped/);
  });

  test('a waiter tries again as soon as the server is back, not at its next safety re-check', async () => {
    const server = single!;
    const key = newKey();
    const holder = await open({ url: server.url }).tryAcquire(key, { ttlMs: 30_000 });
    expect(holder).not.toBeNull();
    const waiting = open({ url: server.url, pollIntervalMs: 60_000 }).acquire(key, { waitMs: 10_000 });
    // Let the waiter settle into its wait (subscribed, capped by the holder's 30 s lease).
    await new Promise((resolve) => setTimeout(resolve, 200));
    await server.restart();
    const backAt = Date.now();
    const lock = await waiting;
    expect(Date.now() - backAt).toBeLessThan(2000);
    await lock.release();
  });

  test('a dropped connection with the server intact is treated the same (it cannot be told apart from a restart); the key is let go, not left to its TTL', async () => {
    const server = single!;
    const key = newKey();
    const holding = open({ nodes: [{ host: '127.0.0.1', port: server.port, connectionName: 'restart-test-holder' }] });
    const holder = await holding.tryAcquire(key, { ttlMs: 30_000 });
    expect(holder).not.toBeNull();
    const admin = new Redis(server.url);
    try {
      const clients = String(await admin.client('LIST'))
        .split('\n')
        .filter((line) => line.includes('name=restart-test-holder'));
      expect(clients).toHaveLength(1);
      const id = /\bid=(\d+)/.exec(clients[0]!)![1]!;
      const waiter = holderAbortedWhenGranted(open({ url: server.url }).acquire(key, { waitMs: 10_000 }), holder!);
      const killedAt = Date.now();
      await admin.client('KILL', 'ID', id);
      const granted = await waiter;
      expect(granted.holderAborted, 'the waiter was granted before the holder was told').toBe(true);
      expect((holder!.signal.reason as { code?: string }).code).toBe(ErrorCode.Lost);
      // The holder lets go of the key once it has reconnected, long before the 30 s lease would end.
      expect(Date.now() - killedAt).toBeLessThan(5000);
      await granted.lock.release();
    } finally {
      admin.disconnect();
    }
  });
});

describe.skipIf(!single)('a primary turned into a replica (a failover that keeps connections open)', { timeout: 30_000 }, () => {
  test('the holder is told at its next renewal (READONLY), not at the end of its lease; grants there fail as BackendError', async () => {
    const primary = await startRedisProcess();
    const admin = new Redis(primary.url);
    try {
      const locks = open({ url: primary.url });
      const ttlMs = 3000;
      const holder = await locks.tryAcquire(newKey(), { ttlMs });
      expect(holder).not.toBeNull();
      const demotedAt = Date.now();
      // The other server stands for the promoted replica; the demoted one keeps its clients connected.
      expect(await admin.replicaof('127.0.0.1', single!.port)).toBe('OK');
      await lostWithin(holder!, ttlMs, 'holder told after its server became a replica');
      expect(Date.now() - demotedAt, 'told at the first renewal (ttl/3), not at the safety deadline (0.9 ttl)').toBeLessThan(
        ttlMs / 3 + 700,
      );
      expect((holder!.signal.reason as { message?: string }).message).toMatch(/READONLY/);
      await expect(locks.tryAcquire(newKey())).rejects.toMatchObject({ code: ErrorCode.Backend });
    } finally {
      admin.disconnect();
      await primary.stop();
    }
  });
});

describe.skipIf(!durable)('a server with AOF and appendfsync always, killed and restarted', { timeout: 30_000 }, () => {
  test('keeps its data: the next holder is granted only after the old one was told and let go, with the very next token', async () => {
    const server = durable!;
    const key = newKey();
    const holder = await open({ url: server.url }).tryAcquire(key, { ttlMs: 30_000 });
    expect(holder).not.toBeNull();
    // waitForBackend: the waiter's first contact may meet the restart, and it is meant to wait for it.
    const waiter = holderAbortedWhenGranted(open({ url: server.url }).acquire(key, { waitMs: 10_000, waitForBackend: true }), holder!);
    await server.restart();
    const granted = await waiter;
    expect(granted.holderAborted, 'the waiter was granted before the holder was told').toBe(true);
    // Above the holder's token whether or not the counter survived: the server's clock is its floor.
    expect(granted.lock.token).toBeGreaterThan(holder!.token);
    await granted.lock.release();
  });
});

describe.skipIf(!three)('a quorum of 3 with nodes restarted without persistence', { timeout: 30_000 }, () => {
  test('one node restarted: the grant keeps a majority of votes; a second one: the holder is told before a waiter is granted', async () => {
    const set = three!;
    const url = quorumUrl(set.urls);
    const key = newKey();
    const holder = await open({ url }).tryAcquire(key, { ttlMs: 30_000 });
    expect(holder).not.toBeNull();
    const other = open({ url });
    await set.restart(0);
    expect(await other.tryAcquire(key)).toBeNull();
    expect(holder!.signal.aborted).toBe(false);
    const waiter = holderAbortedWhenGranted(other.acquire(key, { waitMs: 15_000 }), holder!);
    await set.restart(1);
    const granted = await waiter;
    expect(granted.holderAborted, 'holder still believed it held the lock when the waiter was granted').toBe(true);
    expect((holder!.signal.reason as { code?: string }).code).toBe(ErrorCode.Lost);
    await granted.lock.release();
  });
});
