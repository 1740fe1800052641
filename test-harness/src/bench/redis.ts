import { createLockProvider } from '@holdfast/core';
import type { Redis } from 'ioredis';
import { benchServer } from './bench-server.js';
import { contentionTable } from './contention.js';
import { crossProcessPair } from './cross-process.js';
import { RAW } from './goals.js';
import { handoffSideBySide, inProcessPair, phaseFor } from './handoff.js';
import { childHolder, holdMany } from './hold-many.js';
import { HolderProcess } from './holder-process.js';
import { holdfastSubject } from './holdfast.js';
import { benchKey } from './measure.js';
import { openAll } from './open-all.js';
import { quitAll, redisConnector } from './peers/redis-connections.js';
import { redisSemaphoreSubject } from './peers/redis-semaphore.js';
import { redlockBeta, redlockSubject, sesameRedlock } from './peers/redlock.js';
import { verrouRedisSubject } from './peers/verrou.js';
import { redisCommands, scriptCalls, usedMemory } from './redis-counters.js';
import { redisQuorumRows } from './redis-quorum.js';
import { lockRoundTrip, type RoundTrip, sideBySide } from './side-by-side.js';
import { Steps } from './steps.js';
import { takeMany } from './take-many.js';
import type { BenchModule, BenchRow, LockSubject } from './types.js';

const RELEASE_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

/**
 * Holdfast on one Redis server beside bare ioredis round trips and the peers users compare it with
 * (redlock 5 beta, @sesamecare-oss/redlock, @verrou/core, redis-semaphore), all in one run. Redis
 * comes from HOLDFAST_BENCH_REDIS_URL, else resolveBackend('redis').
 */
export const redisBench: BenchModule = {
  name: 'redis',
  async run(settings, log) {
    const server = await benchServer('redis');
    const { url } = server;
    const connect = await redisConnector();
    const stats = connect(url);
    try {
      const version = /redis_version:(\S+)/.exec(await stats.info('server'))?.[1] ?? 'unknown';
      const holdfast = holdfastSubject('holdfast redis', () => createLockProvider(url));
      const subjects: LockSubject[] = [
        holdfast,
        redlockSubject('redlock 5.0.0-beta.2', await redlockBeta(), [url], connect),
        redlockSubject('@sesamecare-oss/redlock 1.4', await sesameRedlock(), [url], connect),
        verrouRedisSubject(url, connect),
        redisSemaphoreSubject(url, connect),
      ];
      const steps = new Steps(log, settings.steps);
      await steps.run('uncontended', async () =>
        sideBySide(
          'uncontended acquire+release',
          await openAll([() => rawRoundTrip(connect(url)), ...subjects.map((subject) => () => lockRoundTrip(subject))]),
          settings,
        ),
      );
      await steps.run('hand-off', async () => {
        const pairs = await openAll([...subjects.map((subject) => () => inProcessPair(subject)), () => crossProcessPair(url, holdfast)]);
        return handoffSideBySide('hand-off latency', pairs, phaseFor(subjects), settings);
      });
      // The opt-in unfair mode beside the FIFO default, in the contention cells only.
      const barging = holdfastSubject('holdfast redis barging', () => createLockProvider(url, { adapter: { fairness: 'barging' } }), {
        note: "fairness: 'barging' (opt-in)",
      });
      await steps.run('contention', () => contentionTable([...subjects, barging], settings, redisCommands(stats)));
      await steps.run('hold many', () => holdManyRows(url, stats, settings));
      await steps.run('take many without renewal', () => takeMany(subjects[1]!, settings.hold, `hold ${settings.hold} locks`));
      await steps.run('quorum of 3', () => redisQuorumRows(connect, settings));
      return { server: `redis-server ${version} (${server.label})`, rows: steps.rows, failures: steps.failures };
    } finally {
      await quitAll([stats]);
      await server.stop();
    }
  },
};

/**
 * The floor: SET NX PX then an owner-checked DEL by EVALSHA (the script loaded once, as every
 * library here runs its scripts), two round trips. EVAL of the source would send and hash the script
 * on every release, a floor that peers beat (verrou measured 1.22x of it).
 */
async function rawRoundTrip(redis: Redis): Promise<RoundTrip> {
  const key = benchKey('raw');
  const sha = (await redis.script('LOAD', RELEASE_SCRIPT)) as string;
  return {
    subject: RAW.redis,
    async run() {
      const value = Math.random().toString(36);
      if ((await redis.set(key, value, 'PX', 30_000, 'NX')) !== 'OK') throw new Error('raw bench key busy');
      await redis.evalsha(sha, 1, key, value);
    },
    close: () => quitAll([redis]),
  };
}

/** Many locks held by a child process: their cost in time, the holder's CPU, renewal scripts and server memory. */
async function holdManyRows(
  url: string,
  stats: Redis,
  settings: { quick: boolean; hold: number; holdBudgetMs: number },
): Promise<BenchRow[]> {
  const holder = HolderProcess.start(url);
  try {
    const memoryBefore = await usedMemory(stats);
    const ttlMs = settings.quick ? 1000 : 3000;
    const plan = { count: settings.hold, ttlMs, windowMs: ttlMs * 2, budgetMs: settings.holdBudgetMs, concurrency: 200 };
    const calls = { metric: 'renewal calls per TTL', note: 'EVAL/EVALSHA the server ran', perMs: ttlMs, count: () => scriptCalls(stats) };
    const rows = await holdMany('holdfast redis', childHolder(holder), plan, calls);
    const taken = rows.find((row) => row.metric === 'locks taken')!.value;
    const bytes = (await usedMemory(stats)) - memoryBefore;
    return [
      ...rows,
      { group: rows[0]!.group, subject: 'holdfast redis', metric: 'server memory per lock', value: bytes / taken, unit: 'bytes' },
    ];
  } finally {
    await holder.kill(); // the locks expire on their own within the TTL
  }
}
