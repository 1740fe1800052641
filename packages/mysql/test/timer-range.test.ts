import { createLockProvider, ErrorCode } from '@holdfast/core';
import { MAX_TIMER_MS } from '@holdfast/core/backend';
import { rejection } from '@holdfast/test-harness/helpers';
import { expect, test } from 'vitest';
import { createMysqlProvider } from '../src/index.js';

// Above Node's longest timer (a longer delay fires after 1 ms), at a closed loopback port: refused before any I/O.
const ABOVE = MAX_TIMER_MS + 1;
const URL_ = 'mysql://u@127.0.0.1:1/db';
const makers: [string, () => unknown][] = [
  ...['callTimeoutMs', 'closeTimeoutMs', 'pollIntervalMs', 'connectTimeoutMs'].map((name): [string, () => unknown] => [
    name,
    () => createMysqlProvider({ url: URL_, [name]: ABOVE }),
  ]),
  ['pollIntervalMs', () => createLockProvider(URL_, { adapter: { pollIntervalMs: ABOVE } })],
  ['url pollInterval', () => createLockProvider(`${URL_}?pollInterval=25d`)],
  ['url connectTimeout', () => createLockProvider(`${URL_}?connectTimeout=2147483648`)],
];

test.each(makers)('%s above 2^31-1 ms is an InvalidArgumentError naming the limit, before a pool exists', async (name, make) => {
  const error = await rejection(Promise.resolve().then(make), name);
  expect(error).toMatchObject({ code: ErrorCode.InvalidArgument });
  expect(String(error)).toMatch(new RegExp(`${name}.*${MAX_TIMER_MS} ms`));
});
