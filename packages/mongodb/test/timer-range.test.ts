import { createLockProvider, ErrorCode } from '@holdfast/core';
import { MAX_TIMER_MS, MAX_TTL_MS } from '@holdfast/core/backend';
import { rejection } from '@holdfast/test-harness/helpers';
import { expect, test } from 'vitest';
import { createMongoProvider } from '../src/index.js';

/** Node fires a longer setTimeout after 1 ms. */
const ABOVE = MAX_TIMER_MS + 1;
// A closed loopback port: every case fails before any I/O.
const URL_ = 'mongodb://127.0.0.1:1/db';

test.each([
  // The driver's serverSelectionTimeoutMS and connectTimeoutMS are taken from callTimeoutMs: 2^31 would be 1 ms there.
  ['callTimeoutMs', MAX_TIMER_MS, () => createMongoProvider({ url: URL_, callTimeoutMs: ABOVE })],
  ['closeTimeoutMs', MAX_TIMER_MS, () => createMongoProvider({ url: URL_, closeTimeoutMs: ABOVE })],
  ['pollIntervalMs', MAX_TIMER_MS, () => createMongoProvider({ url: URL_, pollIntervalMs: ABOVE })],
  ['pingIntervalMs', MAX_TIMER_MS, () => createMongoProvider({ url: URL_, pingIntervalMs: ABOVE })],
  // The default lease, which no ttlMs may exceed either.
  ['lockExpirationMs', MAX_TTL_MS, () => createMongoProvider({ url: URL_, lockExpirationMs: MAX_TTL_MS + 1 })],
  ['holdfastPollInterval', MAX_TIMER_MS, () => createLockProvider(`${URL_}?holdfastPollInterval=25d`)],
  ['pingIntervalMs', MAX_TIMER_MS, () => createLockProvider(`${URL_}?holdfastPingInterval=25d&holdfastLockExpiration=7d`)],
  ['lockExpirationMs', MAX_TTL_MS, () => createLockProvider(`${URL_}?holdfastLockExpiration=8d`)],
  ['callTimeoutMs', MAX_TIMER_MS, () => createLockProvider(URL_, { callTimeoutMs: ABOVE })],
])('%s above %d ms is refused with InvalidArgumentError naming the limit, before a client exists', async (name, limit, make) => {
  const error = await rejection(Promise.resolve().then(make), String(name));
  expect(error).toMatchObject({ code: ErrorCode.InvalidArgument });
  expect(String(error)).toMatch(name === 'holdfastPollInterval' ? /pollIntervalMs/ : new RegExp(name));
  expect(String(error)).toContain(`${limit} ms`);
});
