import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { LockDocument } from '../src/index.js';
import { provider } from './fixtures.js';

const mongodb = await useBackend('mongodb');

describe.skipIf(!mongodb.url)(`lock changes as version records (${mongodb.label})`, () => {
  const url = mongodb.url!;
  let raw: MongoClient;
  let ferretdb = false;
  beforeAll(async () => {
    raw = new MongoClient(url);
    await raw.connect();
    ferretdb = typeof (await raw.db().command({ buildInfo: 1 }))['ferretdbVersion'] === 'string';
  });
  afterAll(() => raw?.close());

  test('what FerretDB makes atomic: a unique insert has one winner, a filtered update does not', async (t) => {
    if (!ferretdb) t.skip();
    const clients = await Promise.all(Array.from({ length: 8 }, () => new MongoClient(url).connect()));
    try {
      const collection = (i: number) => clients[i]!.db().collection<{ _id: string; v: number }>('atomicity-probe');
      const updateWinners: number[] = [];
      for (let round = 0; round < 10; round++) {
        const id = `${Date.now().toString(36)}-${round}`;
        const inserted = await Promise.all(
          clients.map((_, i) =>
            collection(i)
              .insertOne({ _id: `${id}-insert`, v: i })
              .then(
                () => 1,
                () => 0,
              ),
          ),
        );
        expect(
          inserted.reduce((a, b) => a + b, 0),
          `round ${round}: racing inserts of one _id`,
        ).toBe(1);
        await collection(0).insertOne({ _id: id, v: 0 });
        const updated = await Promise.all(clients.map((_, i) => collection(i).updateOne({ _id: id, v: 0 }, { $set: { v: i + 1 } })));
        updateWinners.push(updated.filter((result) => result.modifiedCount === 1).length);
      }
      console.info(`[atomicity] racing updateOne({_id, v: 0}) by 8 clients, winners per round: ${updateWinners.join(' ')}`);
      // If this ever fails, FerretDB made filtered updates atomic and the version records could go.
      expect(Math.max(...updateWinners), 'a filtered update let several racers win').toBeGreaterThan(1);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
    }
  });

  test('under contention never two holders at once, and tokens strictly increase in grant order', async () => {
    const contenders = Array.from({ length: 6 }, (_, i) => provider(url, { owner: `contender-${i}` }));
    const key = `chain/contended/${Date.now().toString(36)}`;
    let holders = 0;
    let maxHolders = 0;
    const tokens: bigint[] = [];
    try {
      await Promise.all(
        contenders.map(async (locks) => {
          for (let i = 0; i < 8; i++) {
            const lock = await locks.acquire(key, { waitMs: 60_000 });
            maxHolders = Math.max(maxHolders, ++holders);
            tokens.push(lock.token);
            await new Promise((resolve) => setTimeout(resolve, 5));
            holders--;
            await lock.release();
          }
        }),
      );
      expect(maxHolders).toBe(1);
      expect(tokens).toHaveLength(48);
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]!, `grant ${i}`).toBeGreaterThan(tokens[i - 1]!);
    } finally {
      await Promise.all(contenders.map((locks) => locks.close()));
    }
  });

  test('a stale or regressed mirror document never makes a held lock look free', async (t) => {
    if (!ferretdb) t.skip();
    const holder = provider(url, { owner: 'holder' });
    const contender = provider(url, { owner: 'contender' });
    const key = `chain/stale-mirror/${Date.now().toString(36)}`;
    try {
      const first = await holder.tryAcquire(key);
      await first!.release();
      const second = await holder.tryAcquire(key);
      expect(second).not.toBeNull();
      // What a mirror write delivered late would leave: the state after the first release.
      const locks = raw.db().collection<LockDocument>('locks');
      await locks.updateOne({ _id: key }, { $set: { state: 0, version: 2 } });
      expect(await contender.tryAcquire(key), 'granted on the strength of a stale mirror').toBeNull();
      expect((await contender.inspect(key))?.owner).toBe('holder');
      expect(await second!.isHeld()).toBe(true);
      await second!.release();
      expect(await contender.tryAcquire(key)).not.toBeNull();
    } finally {
      await Promise.all([holder.close(), contender.close()]);
    }
  });
});
