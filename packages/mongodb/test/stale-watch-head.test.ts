import { until } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { MongoClient, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { VersionRecord } from '../src/index.js';
import { providerWithBackend } from './fixtures.js';

const mongodb = await useBackend('mongodb');

/** The backend's connected parts, private: the test runs one watch tick by hand, as the waiter's timer would. */
interface WatchingBackend {
  connected(): Promise<{ catalog: { watchedDocuments(keys: readonly string[], bound: { signal: AbortSignal }): Promise<unknown> } }>;
}

/** As in pruning.test.ts: short enough for a test, the act window well above a commit on a loaded machine. */
const TIMING = { actWindowMs: 1_000, pruneDelayMs: 2_000 };

/**
 * Found by review: a waiter's watch read of the version after the latest it knew was remembered as
 * the key's head, unchecked. A late insert that lands on a pruned version id (a release held on the
 * network while the key moved on) then became the start of the next walk, which re-read that very
 * record, found it "still there" and committed on it: two holders, the token going backwards.
 */
describe.skipIf(!mongodb.url)(`a watch's read is a hint, never a walk's start (${mongodb.label})`, () => {
  const url = mongodb.url!;
  let raw: MongoClient;
  let ferretdb = false;
  const records = () => raw.db().collection<VersionRecord>('locks.versions');
  beforeAll(async () => {
    raw = await new MongoClient(url).connect();
    ferretdb = typeof (await raw.db().command({ buildInfo: 1 }))['ferretdbVersion'] === 'string';
  });
  afterAll(async () => {
    await raw?.close();
  });

  test('a late release landing on a pruned version, then seen by a waiter, grants nobody a held key', async (t) => {
    if (!ferretdb) t.skip();
    const [b, c, holder, waiter] = ['b', 'c', 'holder', 'waiter'].map((owner) =>
      providerWithBackend(url, { owner }, { chainTiming: TIMING }),
    );
    const key = `stale-watch/${Date.now().toString(36)}`;
    try {
      const first = await b!.locks.tryAcquire(key, { ttlMs: 60_000 });
      expect(first, 'a free key was refused').not.toBeNull();
      // The waiter has seen version 1 (its attempt was busy).
      expect(await waiter!.locks.tryAcquire(key)).toBeNull();
      const v1 = await records().findOne({ _id: `1:${key}` });
      expect(v1, 'version 1 recorded').not.toBeNull();
      // b's release (based on version 1) is held on the network while the key moves on.
      expect(await holder!.locks.forceRelease(key)).toBe(true);
      await (await c!.locks.tryAcquire(key))!.release();
      const held = await holder!.locks.tryAcquire(key, { ttlMs: 60_000 });
      expect(held, 'the key was not free for the holder').not.toBeNull();
      await until(async () => (await records().countDocuments({ key, version: { $lt: 5 } })) === 0, 20_000, 'versions 1-4 pruned');
      // The held release lands now, on the id of version 2, which pruning freed: what commitUnlock sends.
      const { _id, key: _key, version: _version, commit: _commit, ...fields } = v1!;
      await records().insertOne({ ...fields, state: 0, commit: new ObjectId(), _id: `2:${key}`, key, version: 2 });
      // The waiter's watch reads the version after the one it knows (its poll tick), then it tries.
      const { catalog } = await (waiter!.backend as unknown as WatchingBackend).connected();
      await catalog.watchedDocuments([key], { signal: AbortSignal.timeout(5_000) });
      const second = await waiter!.locks.tryAcquire(key, { ttlMs: 60_000 });
      await second?.release();
      expect(second, `granted token ${second?.token} while token ${held!.token} was held`).toBeNull();
      expect(await held!.isHeld(), 'the holder lost its lock').toBe(true);
      await held!.release();
    } finally {
      for (const side of [b, c, holder, waiter]) await side!.locks.close();
    }
  });
});
