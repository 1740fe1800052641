import { createLockProvider, type LockProvider } from '@holdfast/core';
import type { Redis } from 'ioredis';
import { redisServerBinary } from '../servers/binaries.js';
import { startRedisSet } from '../servers/redis.js';
import { benchServer } from './bench-server.js';
import { opsPerSecond, summarize } from './measure.js';
import { handoff, holdMany } from './procedures.js';
import type { BenchModule, BenchRow } from './types.js';

/** The slice of the redlock package (5.0.0-beta.2) this bench uses; loaded at run time only. */
interface RedlockLock {
  release(): Promise<unknown>;
}
interface Redlock {
  acquire(resources: string[], duration: number, settings?: { retryCount?: number }): Promise<RedlockLock>;
}
type RedlockClass = new (clients: Redis[], settings?: { retryCount?: number }) => Redlock;

const runId = Math.random().toString(36).slice(2, 8);
const RELEASE_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

/**
 * Holdfast on one Redis server side by side with the redlock package and bare ioredis round trips,
 * all on the same server in one run. Redis comes from HOLDFAST_BENCH_REDIS_URL, else resolveBackend('redis').
 */
export const redisBench: BenchModule = {
  name: 'redis',
  async run() {
    const server = await benchServer('redis');
    const url = server.url;
    // Modules the bench alone needs, loaded here so that other benches run without them.
    const { Redis: RedisClient } = await import('ioredis');
    const { default: RedlockImpl } = (await import('redlock' as string)) as { default: RedlockClass };
    const clients: Redis[] = [];
    const client = (): Redis => {
      const c = new RedisClient(url);
      clients.push(c);
      return c;
    };
    const redlock = (settings?: { retryCount?: number }): Redlock => new RedlockImpl([client()], settings);
    const create = (): Promise<LockProvider> => createLockProvider(url);
    try {
      const stats = client();
      const quorum = await quorumRows(RedisClient, RedlockImpl);
      return [
        ...(await uncontendedSideBySide(UNCONTENDED, [
          { subject: 'raw ioredis (SET NX PX + EVAL del)', op: rawRoundTrip(client()) },
          { subject: 'holdfast redis', op: holdfastRoundTrip(await create()) },
          { subject: 'redlock 5.0.0-beta.2', op: redlockRoundTrip(redlock({ retryCount: 0 })) },
        ])),
        ...(await handoff('holdfast redis', create, 200)),
        ...(await redlockHandoff(redlock({ retryCount: 0 }), redlock({ retryCount: 1000 }), 25)),
        ...(await holdMany('holdfast redis', create, { ttlMs: 3000, windowMs: 6000 }, () => scriptCalls(stats))),
        await memoryPerLock(stats, create),
        await redlockAcquireMany(redlock({ retryCount: 0 })),
        ...quorum,
      ];
    } finally {
      await Promise.allSettled(clients.map((c) => c.quit()));
      await server.stop();
    }
  },
};

const UNCONTENDED = 'uncontended acquire+release';

/** Quorum mode on 3 local redis-server instances (skipped without the binary): holdfast vs redlock. */
async function quorumRows(RedisClient: typeof Redis, RedlockImpl: RedlockClass): Promise<BenchRow[]> {
  if (!(await redisServerBinary())) return [];
  const set = await startRedisSet(3);
  const clients = set.urls.map((url) => new RedisClient(url));
  try {
    const [first, ...others] = set.urls.map((url) => new URL(url).host);
    const url = `redis://${first}?quorum=${others.join(',')}`;
    const create = (): Promise<LockProvider> => createLockProvider(url);
    const uncontendedRows = await uncontendedSideBySide('quorum of 3: uncontended acquire+release', [
      { subject: 'holdfast redis quorum', op: holdfastRoundTrip(await create()) },
      { subject: 'redlock 5.0.0-beta.2', op: redlockRoundTrip(new RedlockImpl(clients, { retryCount: 0 })) },
    ]);
    const handoffRows = await handoff('holdfast redis quorum', create, 100);
    return [...uncontendedRows, ...handoffRows.map((row) => ({ ...row, group: 'quorum of 3: handoff latency' }))];
  } finally {
    await Promise.allSettled(clients.map((c) => c.quit()));
    await set.stop();
  }
}

interface Subject {
  readonly subject: string;
  /** One acquire + release, and how to free what the subject keeps open. */
  readonly op: { run(): Promise<void>; close(): Promise<void> };
}

/**
 * Ops/s of several subjects measured in alternating slices, so that load from elsewhere on the
 * machine (shared CI runners) hits them all alike and their ratio stays meaningful.
 */
async function uncontendedSideBySide(group: string, subjects: Subject[], totalMs = 3000, sliceMs = 250): Promise<BenchRow[]> {
  const counts = subjects.map(() => 0);
  const spent = subjects.map(() => 0);
  try {
    for (const { op } of subjects) await opsPerSecond(() => op.run(), 200);
    for (let round = 0; round < totalMs / sliceMs; round++) {
      for (const [i, { op }] of subjects.entries()) {
        const start = performance.now();
        while (performance.now() - start < sliceMs) {
          await op.run();
          counts[i]!++;
        }
        spent[i]! += performance.now() - start;
      }
    }
  } finally {
    await Promise.allSettled(subjects.map(({ op }) => op.close()));
  }
  return subjects.map(({ subject }, i) => ({
    group,
    subject,
    metric: 'ops/s',
    value: counts[i]! / (spent[i]! / 1000),
    unit: 'ops/s',
    note: 'measured in alternating 250 ms slices',
  }));
}

/** The floor: SET NX PX then an owner-checked DEL by EVAL, two round trips. */
function rawRoundTrip(redis: Redis): Subject['op'] {
  const key = `holdfast-bench/${runId}/raw`;
  return {
    async run() {
      const value = Math.random().toString(36);
      if ((await redis.set(key, value, 'PX', 30_000, 'NX')) !== 'OK') throw new Error('raw bench key busy');
      await redis.eval(RELEASE_SCRIPT, 1, key, value);
    },
    close: async () => undefined,
  };
}

function holdfastRoundTrip(provider: LockProvider): Subject['op'] {
  const key = `holdfast-bench/${runId}/holdfast-uncontended-${Math.random().toString(36).slice(2, 6)}`;
  return {
    async run() {
      const lock = await provider.tryAcquire(key);
      if (!lock) throw new Error(`bench key ${key} unexpectedly busy`);
      await lock.release();
    },
    close: () => provider.close(),
  };
}

function redlockRoundTrip(redlock: Redlock): Subject['op'] {
  const key = `holdfast-bench/${runId}/redlock-uncontended-${Math.random().toString(36).slice(2, 6)}`;
  return {
    async run() {
      const lock = await redlock.acquire([key], 30_000);
      await lock.release();
    },
    close: async () => undefined,
  };
}

/** redlock has no wake-up: the waiter retries every retryDelay (200 ms) +- retryJitter (100 ms). */
async function redlockHandoff(holder: Redlock, waiter: Redlock, rounds: number): Promise<BenchRow[]> {
  const key = `holdfast-bench/${runId}/redlock-handoff`;
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const held = await holder.acquire([key], 30_000);
    const waiting = waiter.acquire([key], 30_000);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const releasedAt = performance.now();
    await held.release();
    const next = await waiting;
    samples.push(performance.now() - releasedAt);
    await next.release();
  }
  const { p50, p99 } = summarize(samples);
  const note = 'default retryDelay 200 ms, retryJitter 100 ms';
  return [
    { group: 'handoff latency', subject: 'redlock 5.0.0-beta.2', metric: 'p50', value: p50, unit: 'ms', note },
    { group: 'handoff latency', subject: 'redlock 5.0.0-beta.2', metric: 'p99', value: p99, unit: 'ms', note },
  ];
}

async function redlockAcquireMany(redlock: Redlock, count = 10_000): Promise<BenchRow> {
  const prefix = `holdfast-bench/${runId}/redlock-many`;
  const started = performance.now();
  const locks: RedlockLock[] = [];
  for (let start = 0; start < count; start += 500) {
    const batch = Array.from({ length: Math.min(500, count - start) }, (_, i) => redlock.acquire([`${prefix}/${start + i}`], 30_000));
    locks.push(...(await Promise.all(batch)));
  }
  const ms = performance.now() - started;
  await Promise.all(locks.map((lock) => lock.release()));
  return { group: `hold ${count} locks`, subject: 'redlock 5.0.0-beta.2', metric: 'acquire all', value: ms, unit: 'ms', note: 'no renewal' };
}

/** Server memory for 10k held locks (lock key + companion hash), per lock. */
async function memoryPerLock(stats: Redis, create: () => Promise<LockProvider>, count = 10_000): Promise<BenchRow> {
  const provider = await create();
  const prefix = `holdfast-bench/${runId}/memory`;
  try {
    const before = await usedMemory(stats);
    const locks = [];
    for (let start = 0; start < count; start += 500) {
      const batch = Array.from({ length: Math.min(500, count - start) }, (_, i) => provider.tryAcquire(`${prefix}/${start + i}`, { ttlMs: 60_000 }));
      locks.push(...(await Promise.all(batch)));
    }
    const bytes = (await usedMemory(stats)) - before;
    await Promise.all(locks.map((lock) => lock?.release()));
    return { group: `hold ${count} locks`, subject: 'holdfast redis', metric: 'server memory per lock', value: bytes / count, unit: 'bytes' };
  } finally {
    await provider.close();
  }
}

async function usedMemory(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? Number.NaN);
}

/** Script calls the server ran (each renewal is one EVALSHA; commands inside scripts are not counted). */
async function scriptCalls(redis: Redis): Promise<number> {
  const stats = await redis.info('commandstats');
  const calls = (command: string): number => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return calls('evalsha') + calls('eval');
}
