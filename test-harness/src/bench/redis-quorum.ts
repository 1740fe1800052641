import { createLockProvider } from '@holdfast/core';
import type { Redis } from 'ioredis';
import { redisServerBinary } from '../servers/binaries.js';
import { startRedisSet } from '../servers/redis.js';
import { EVENT_PHASE_MS, handoffSideBySide, inProcessPair } from './handoff.js';
import { holdfastSubject } from './holdfast.js';
import { openAll } from './open-all.js';
import { redlockBeta, redlockSubject, sesameRedlock } from './peers/redlock.js';
import type { BenchSettings } from './settings.js';
import { lockRoundTrip, sideBySide } from './side-by-side.js';
import type { BenchRow } from './types.js';

/** Quorum mode on 3 local redis-server instances: Holdfast beside both Redlock packages on the same three. */
export async function redisQuorumRows(connect: (url: string) => Redis, settings: BenchSettings): Promise<BenchRow[]> {
  if (!(await redisServerBinary())) throw new Error('the quorum rows need redis-server on PATH to start 3 instances');
  const set = await startRedisSet(3);
  try {
    const [first, ...others] = set.urls.map((url) => new URL(url).host);
    const url = `redis://${first}?quorum=${others.join(',')}`;
    const holdfast = holdfastSubject('holdfast redis quorum', () => createLockProvider(url));
    const subjects = [
      holdfast,
      redlockSubject('redlock 5.0.0-beta.2', await redlockBeta(), set.urls, connect),
      redlockSubject('@sesamecare-oss/redlock 1.4', await sesameRedlock(), set.urls, connect),
    ];
    const rows = await sideBySide(
      'quorum of 3: uncontended acquire+release',
      await openAll(subjects.map((subject) => () => lockRoundTrip(subject))),
      settings,
    );
    rows.push(...(await handoffSideBySide('quorum of 3: hand-off latency', [await inProcessPair(holdfast)], EVENT_PHASE_MS, settings)));
    return rows;
  } finally {
    await set.stop();
  }
}
