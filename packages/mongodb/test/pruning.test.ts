import { ErrorCode, type Lock } from '@holdfast/core';
import { codeOf, settle, until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { VersionRecord } from '../src/index.js';
import { provider, providerWithBackend } from './fixtures.js';
import { commandWith, StallProxy } from './stall-proxy.js';

const mongodb = await useBackend('mongodb');

/** Short enough for a test, and the act window well above a commit on a loaded machine. */
const TIMING = { actWindowMs: 1_000, pruneDelayMs: 2_000 };
/** Longer than the prune delay plus a few pinger rounds (250 ms): the held insert lands after its id was pruned. */
const STALL_MS = 5_000;

describe.skipIf(!mongodb.url)(`superseded version records are pruned (${mongodb.label})`, () => {
  const url = mongodb.url!;
  let raw: MongoClient;
  let ferretdb = false;
  let proxy: StallProxy;
  const records = () => raw.db().collection<VersionRecord>('locks.versions');
  beforeAll(async () => {
    raw = await new MongoClient(url).connect();
    ferretdb = typeof (await raw.db().command({ buildInfo: 1 }))['ferretdbVersion'] === 'string';
    proxy = await StallProxy.start(Number(new URL(url).port));
  });
  afterAll(async () => {
    await proxy?.close();
    await raw?.close();
  });

  test('the versions collection keeps about one record per key, however many grants', async (t) => {
    if (!ferretdb) t.skip();
    const { locks } = providerWithBackend(url, {}, { chainTiming: TIMING });
    const key = `prune/many/${Date.now().toString(36)}`;
    try {
      for (let i = 0; i < 30; i++) await (await locks.tryAcquire(key))!.release();
      expect(await records().countDocuments({ key }), 'every grant and release recorded').toBeGreaterThanOrEqual(50);
      await until(
        async () => (await records().countDocuments({ key })) <= 1,
        TIMING.pruneDelayMs + 5_000,
        'the superseded records were pruned',
      );
      const next = await locks.tryAcquire(key);
      expect(next?.token, 'the fence goes on after pruning').toBe(31n);
      await next!.release();
    } finally {
      await locks.close();
    }
  });

  // The safe act window, and one longer than the stall: the second shows that the scenario really
  // re-inserts a pruned version, so that the first one's passing means something.
  test.for([
    { actWindowMs: TIMING.actWindowMs, safe: true },
    { actWindowMs: 60_000, safe: false },
  ])('a grab delivered after its version was pruned is never acted on (act window $actWindowMs ms)', async ({ actWindowMs, safe }, t) => {
    if (!ferretdb) t.skip();
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    const late = providerWithBackend(
      proxied.href,
      { owner: 'late', callTimeoutMs: 30_000 },
      { chainTiming: { ...TIMING, actWindowMs } },
    ).locks;
    const [b, c, d] = ['b', 'c', 'd'].map((owner) => providerWithBackend(url, { owner }, { chainTiming: TIMING }).locks);
    const key = `prune/late/${Date.now().toString(36)}-${actWindowMs}`;
    let lockC: Lock | undefined;
    try {
      await (await b!.tryAcquire(key))!.release(); // versions 1, 2: the key has a mirror, so it may be pruned
      expect(await late.inspect(key)).toBeNull(); // connected through the proxy before the insert is held
      const held = proxy.holdNext(commandWith(['insert'], key), STALL_MS);
      // A lease far longer than the stall: only the act window can keep the late reply from being a grant.
      const fromLate = settle(late.tryAcquire(key, { ttlMs: 60_000 }));
      await within(held.held, 5_000, 'the late grab sent its insert'); // it read version 2 and inserts version 3
      await (await b!.tryAcquire(key))!.release(); // versions 3 and 4
      lockC = (await c!.tryAcquire(key)) ?? undefined; // version 5, held
      expect(lockC, 'c could not take the free key').toBeDefined();
      await until(
        async () => (await records().findOne({ _id: `3:${key}` })) === null,
        STALL_MS - 1_000,
        'version 3 was pruned before the late insert landed',
      );
      await within(held.delivered, STALL_MS + 1_000, 'the held insert was delivered');
      const outcome = await within(fromLate, 30_000, 'the late grab answered');
      const lateLock = outcome.value ?? null;
      const report = `late grab: ${outcome.error ? String(outcome.error) : `token ${lateLock?.token}`}`;
      expect(await records().findOne({ _id: `3:${key}` }), 'the late insert did not land in the pruned range').not.toBeNull();
      if (!safe) {
        expect(lateLock, `the scenario did not reproduce the hazard: ${report}`).not.toBeNull();
        return;
      }
      expect(lateLock, report).toBeNull();
      if (outcome.error) expect(codeOf(outcome.error), report).toBe(ErrorCode.Backend);
      expect(await lockC!.isHeld(), 'the holder lost the lock to a pruned version').toBe(true);
      expect((await d!.inspect(key))?.owner).toBe('c');
      expect(await d!.tryAcquire(key), 'a pruned version made the held key look free').toBeNull();
      await lockC!.release();
      lockC = undefined;
      const after = await d!.tryAcquire(key);
      expect(after?.token, 'the key moves on after the late record').toBe(4n);
      await after!.release();
    } finally {
      await lockC?.release().catch(() => undefined);
      await Promise.allSettled([late.close(), b!.close(), c!.close(), d!.close()]);
    }
  });

  test('a walk from the version a provider last saw, pruned since, finds the latest version', async (t) => {
    if (!ferretdb) t.skip();
    const [away, busy] = ['away', 'busy'].map((owner) => providerWithBackend(url, { owner }, { chainTiming: TIMING }).locks);
    const key = `prune/known/${Date.now().toString(36)}`;
    try {
      await (await away!.tryAcquire(key))!.release(); // away last saw version 2 (its own release)
      await (await busy!.tryAcquire(key))!.release(); // versions 3 and 4
      const held = await busy!.tryAcquire(key); // version 5
      await until(
        async () => (await records().countDocuments({ key })) <= 1,
        TIMING.pruneDelayMs + 5_000,
        'the superseded records were pruned',
      );
      // Version 3 is missing now: only the re-read of version 2 (missing too) shows that 2 is not the latest.
      expect(await away!.tryAcquire(key), 'granted on the strength of a pruned version').toBeNull();
      expect((await away!.inspect(key))?.owner).toBe('busy');
      expect(await held!.isHeld()).toBe(true);
      await held!.release();
    } finally {
      await Promise.allSettled([away!.close(), busy!.close()]);
    }
  });

  test('a walk from a mirror whose version was pruned finds the latest version', async (t) => {
    if (!ferretdb) t.skip();
    const { locks } = providerWithBackend(url, { owner: 'holder' }, { chainTiming: TIMING });
    const observer = provider(url);
    const key = `prune/stale-mirror/${Date.now().toString(36)}`;
    try {
      await (await locks.tryAcquire(key))!.release();
      const stale = await raw
        .db()
        .collection('locks')
        .findOne({ _id: key as never }); // version 2: free
      await (await locks.tryAcquire(key))!.release(); // versions 3 and 4
      const held = await locks.tryAcquire(key); // version 5
      await until(
        async () => (await records().countDocuments({ key })) <= 1,
        TIMING.pruneDelayMs + 5_000,
        'the superseded records were pruned',
      );
      // What a mirror write delivered very late would leave: a free state whose next version (3) is pruned.
      await raw
        .db()
        .collection('locks')
        .replaceOne({ _id: key as never }, stale!);
      expect(await observer.tryAcquire(key), 'granted on the strength of a pruned mirror').toBeNull();
      expect((await observer.inspect(key))?.owner).toBe('holder');
      expect(await held!.isHeld()).toBe(true);
      await held!.release();
    } finally {
      await Promise.allSettled([locks.close(), observer.close()]);
    }
  });
});
