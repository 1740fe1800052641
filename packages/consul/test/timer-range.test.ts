import { createLockProvider, ErrorCode } from '@holdfast/core';
import { MAX_TIMER_MS } from '@holdfast/core/backend';
import { rejection } from '@holdfast/test-harness/helpers';
import { expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';

/** Node fires a longer setTimeout after 1 ms. */
const ABOVE = MAX_TIMER_MS + 1;
// A closed loopback port: every case fails before any request.
const AGENT = 'http://127.0.0.1:1';

// lockDelayMs, lockDelayRetryMs (60 s) and monitorRetryMs (1 h) have lower limits of their own.
test.each([
  ['callTimeoutMs', () => createConsulProvider({ url: AGENT, callTimeoutMs: ABOVE })],
  ['closeTimeoutMs', () => createConsulProvider({ url: AGENT, closeTimeoutMs: ABOVE })],
  ['callTimeoutMs', () => createLockProvider('consul://127.0.0.1:1?callTimeout=25d')],
  ['closeTimeoutMs', () => createLockProvider('consul://127.0.0.1:1?closeTimeout=2147483648')],
])('%s above 2^31-1 ms is refused with InvalidArgumentError naming the limit', async (name, make) => {
  const error = await rejection(Promise.resolve().then(make), String(name));
  expect(error).toMatchObject({ code: ErrorCode.InvalidArgument });
  expect(String(error)).toContain(name);
  expect(String(error)).toContain(String(MAX_TIMER_MS));
});
