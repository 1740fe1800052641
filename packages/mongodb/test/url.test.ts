import { createLockProvider, ErrorCode } from '@holdfast/core';
import { describe, expect, test } from 'vitest';
import { createMongoProvider } from '../src/index.js';
import { parseMongoUrl, resolveSettings } from '../src/options.js';

test('holdfast* parameters are read and removed before the URL reaches the driver', () => {
  const { driverUrl, settings } = parseMongoUrl(
    'mongodb://db1:27017,db2:27017/app?replicaSet=rs0&holdfastPingInterval=250ms&holdfastLockExpiration=2s&holdfastPollInterval=100&holdfastLocksCollection=mylocks&holdfastPingsCollection=mypings&holdfastPort=8080',
  );
  expect(driverUrl).toBe('mongodb://db1:27017,db2:27017/app?replicaSet=rs0');
  expect(settings).toEqual({
    pingIntervalMs: 250,
    lockExpirationMs: 2000,
    pollIntervalMs: 100,
    locksCollection: 'mylocks',
    pingsCollection: 'mypings',
    port: 8080,
  });
});

test("MongoDB's defaults: ping 30 s, expiry 15 min, poll 500 ms, collections locks and lockpings", () => {
  expect(resolveSettings({})).toEqual({
    pingIntervalMs: 30_000,
    lockExpirationMs: 900_000,
    pollIntervalMs: 500,
    locksCollection: 'locks',
    pingsCollection: 'lockpings',
  });
});

test.each([
  ['mongodb://127.0.0.1/db?holdfastPingIntervall=1s', 'unknown parameter'],
  ['mongodb://127.0.0.1/db?holdfastPingInterval=soon', 'duration'],
  ['mongodb://127.0.0.1/db?holdfastPingInterval=10s&holdfastLockExpiration=20s', 'at least 3 ping intervals'],
])('createLockProvider(%j) fails with InvalidArgument before connecting', async (url, message) => {
  const error = await createLockProvider(url).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toMatchObject({ code: ErrorCode.InvalidArgument });
  expect(String(error)).toContain(message);
});

test('createLockProvider accepts multi-host connection strings, which are not WHATWG URLs', async () => {
  const url = 'mongodb://127.0.0.1:1,127.0.0.1:2/db?replicaSet=rs0&serverSelectionTimeoutMS=200';
  expect(() => new URL(url)).toThrow();
  const provider = await createLockProvider(url);
  try {
    expect(provider.backend).toBe('mongodb');
  } finally {
    await provider.close().catch(() => undefined);
  }
});

test.each([
  ['an unknown driver option', 'mongodb://127.0.0.1:1/db?notAnOption=1'],
  ['a malformed driver option value', 'mongodb://127.0.0.1:1/db?serverSelectionTimeoutMS=soon'],
  ['no host', 'mongodb:///db'],
])('%s is an InvalidArgumentError before anything connects', async (_what, url) => {
  const started = Date.now();
  const error = await createLockProvider(url).then(
    async (provider) => {
      await provider.close();
      return null;
    },
    (e: unknown) => e,
  );
  expect(error).toMatchObject({ code: ErrorCode.InvalidArgument });
  expect(String(error)).toContain('url');
  expect(Date.now() - started).toBeLessThan(1_500);
});

describe('one vocabulary (docs/options.md)', () => {
  const invalid = (message: RegExp) =>
    expect.objectContaining({ code: ErrorCode.InvalidArgument, message: expect.stringMatching(message) });

  test('the old names are refused by their new name: retryIntervalMs, holdfastRetryInterval', async () => {
    expect(() => createMongoProvider({ url: 'mongodb://127.0.0.1:1/db', retryIntervalMs: 100 } as never)).toThrow(
      invalid(/retryIntervalMs was renamed pollIntervalMs/),
    );
    await expect(createLockProvider('mongodb://127.0.0.1:1/db', { adapter: { retryIntervalMs: 100 } })).rejects.toEqual(
      invalid(/retryIntervalMs was renamed pollIntervalMs/),
    );
    await expect(createLockProvider('mongodb://127.0.0.1:1/db?holdfastRetryInterval=100ms')).rejects.toEqual(
      invalid(/holdfastRetryInterval was renamed holdfastPollInterval/),
    );
  });

  test('unknown options, and provider-level options inside adapter, are refused', async () => {
    expect(() => createMongoProvider({ url: 'mongodb://127.0.0.1:1/db', safetyPollMs: 100 } as never)).toThrow(
      invalid(/not a MongoDB option/),
    );
    await expect(createLockProvider('mongodb://127.0.0.1:1/db', { adapter: { prefix: 'x' } })).rejects.toEqual(
      invalid(/not a MongoDB option/),
    );
    await expect(createLockProvider('mongodb://127.0.0.1:1/db', { adapter: { owner: 'x' } })).rejects.toEqual(
      invalid(/not a MongoDB option/),
    );
  });

  test('pollIntervalMs (option, adapter, URL) and the provider-level options are accepted', async () => {
    const logger = { warn: () => undefined };
    const made = [
      createMongoProvider({
        url: 'mongodb://127.0.0.1:1/db',
        pollIntervalMs: 100,
        owner: 'me',
        callTimeoutMs: 100,
        closeTimeoutMs: 100,
        ttlBelowMinimum: 'reject',
        logger,
      }),
      await createLockProvider('mongodb://127.0.0.1:1/db', {
        owner: 'me',
        ttlBelowMinimum: 'reject',
        logger,
        adapter: { pollIntervalMs: 100 },
      }),
      await createLockProvider('mongodb://127.0.0.1:1/db?holdfastPollInterval=100ms', { owner: 'me' }),
    ];
    try {
      for (const provider of made) expect(provider.owner).toBe('me');
      expect(parseMongoUrl('mongodb://h/db?holdfastPollInterval=100ms').settings).toEqual({ pollIntervalMs: 100 });
    } finally {
      await Promise.all(made.map((provider) => provider.close()));
    }
  });
});
