import { ErrorCode, createLockProvider } from '@holdfast/core';
import { expect, test } from 'vitest';
import { parseMongoUrl, resolveSettings } from '../src/options.js';

test('holdfast* parameters are read and removed before the URL reaches the driver', () => {
  const { driverUrl, settings } = parseMongoUrl(
    ('mongodb://db1:27017,db2:27017/app?replicaSet=rs0&holdfastPingInterval=250ms&holdfastLockExpiration=2s&holdfastRetryInterval=100&holdfastLocksCollection=mylocks&holdfastPingsCollection=mypings&holdfastPort=8080'),
  );
  expect(driverUrl).toBe('mongodb://db1:27017,db2:27017/app?replicaSet=rs0');
  expect(settings).toEqual({ pingIntervalMs: 250, lockExpirationMs: 2000, retryIntervalMs: 100, locksCollection: 'mylocks', pingsCollection: 'mypings', port: 8080 });
});

test("MongoDB's defaults: ping 30 s, expiry 15 min, retry 500 ms, collections locks and lockpings", () => {
  expect(resolveSettings({})).toEqual({ pingIntervalMs: 30_000, lockExpirationMs: 900_000, retryIntervalMs: 500, locksCollection: 'locks', pingsCollection: 'lockpings' });
});

test.each([
  ['mongodb://127.0.0.1/db?holdfastPingIntervall=1s', 'unknown parameter'],
  ['mongodb://127.0.0.1/db?holdfastPingInterval=soon', 'duration'],
  ['mongodb://127.0.0.1/db?holdfastPingInterval=10s&holdfastLockExpiration=20s', 'at least 3 ping intervals'],
])('createLockProvider(%j) fails with InvalidArgument before connecting', async (url, message) => {
  const error = await createLockProvider(url).then(() => null, (e: unknown) => e);
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
