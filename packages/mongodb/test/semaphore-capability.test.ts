import { ErrorCode } from '@holdfast/core';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { MongoClient } from 'mongodb';
import { afterAll, describe, expect, test } from 'vitest';
import { MONGOD_NO_READ_WRITE, MONGOD_NO_SEMAPHORES, MONGODB_CAPABILITIES, mongodCapabilities } from '../src/capabilities.js';
import { provider } from './fixtures.js';

const mongodb = await useBackend('mongodb');

/** What the server says it is, asked the way the adapter asks (buildInfo): FerretDB names its version. */
async function isFerretDb(url: string): Promise<boolean> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5000 });
  try {
    const buildInfo = await client.db().command({ buildInfo: 1 });
    return typeof buildInfo['ferretdbVersion'] === 'string';
  } finally {
    await client.close();
  }
}

const ferretdb = mongodb.url ? await isFerretDb(mongodb.url) : false;

test('on mongod the capabilities are the same but for noSemaphores and noReadWrite, which give the reasons', () => {
  const { noSemaphores, noReadWrite, ...rest } = mongodCapabilities(MONGODB_CAPABILITIES);
  expect(noSemaphores).toBe(MONGOD_NO_SEMAPHORES);
  expect(noReadWrite).toBe(MONGOD_NO_READ_WRITE);
  expect(rest).toEqual(MONGODB_CAPABILITIES);
  expect(MONGODB_CAPABILITIES.noSemaphores, 'the static capabilities are those before the server is known').toBeUndefined();
  expect(MONGODB_CAPABILITIES.noReadWrite, 'the static capabilities are those before the server is known').toBeUndefined();
  expect(MONGODB_CAPABILITIES.writerPreferred, 'waiters have no line of places: a writer may be starved').toBeFalsy();
});

describe.skipIf(!mongodb.url)(`capabilities.noSemaphores and noReadWrite follow the server (${mongodb.label})`, () => {
  const url = mongodb.url!;
  const locks = provider(url);
  const key = `semaphore-capability/${Date.now().toString(36)}`;

  afterAll(() => locks.close());

  test('a provider that has not talked to the server yet cannot tell, and does not claim either way', () => {
    expect(locks.capabilities.noSemaphores).toBeUndefined();
    expect(locks.capabilities.noReadWrite).toBeUndefined();
  });

  test.skipIf(!ferretdb)('FerretDB: semaphores and read-write locks stay on once the server is known', async () => {
    expect(await locks.inspect(key)).toBeNull();
    expect(locks.capabilities.noSemaphores).toBeUndefined();
    expect(locks.capabilities.noReadWrite).toBeUndefined();
    const slot = await locks.semaphore(key, 2).tryAcquire();
    expect(slot, 'a free slot was not granted').not.toBeNull();
    await slot!.release();
    const reader = await locks.readWrite(key).tryRead();
    expect(reader, 'a free key refused a reader').not.toBeNull();
    await reader!.release();
  });

  // Runs when HOLDFAST_TEST_MONGODB_URL points at a mongod (or Docker is there); no mongod here to run it on.
  test.skipIf(ferretdb)(
    'mongod: noSemaphores and noReadWrite are set once the first connection found mongod, with the reasons the calls give',
    async () => {
      expect(await locks.inspect(key)).toBeNull();
      expect(locks.capabilities.noSemaphores).toBe(MONGOD_NO_SEMAPHORES);
      expect(locks.capabilities.noReadWrite).toBe(MONGOD_NO_READ_WRITE);
      // Thrown by semaphore() itself once core refuses on noSemaphores, by the first call until then.
      const refused = await (async () => locks.semaphore(key, 2).tryAcquire())().catch((error: unknown) => error);
      expect((refused as { code?: string }).code).toBe(ErrorCode.Unsupported);
      expect((refused as Error).message).toContain(MONGOD_NO_SEMAPHORES);
      const noReader = await (async () => locks.readWrite(key).tryRead())().catch((error: unknown) => error);
      expect((noReader as { code?: string }).code).toBe(ErrorCode.Unsupported);
      expect((noReader as Error).message).toContain(MONGOD_NO_READ_WRITE);
    },
  );
});
