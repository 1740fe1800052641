import { createLockProvider, ErrorCode } from '@holdfast/core';
import { MAX_TIMER_MS } from '@holdfast/core/backend';
import { rejection, within } from '@holdfast/test-harness/helpers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll, describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { type RedisProcess, startRedisProcess } from './redis-process.js';

/** Node fires a longer setTimeout after 1 ms. */
const ABOVE = MAX_TIMER_MS + 1;
// A closed loopback port: every refused case fails before any I/O.
const CLOSED = 'redis://127.0.0.1:1';

describe('Redis durations above the timer range', () => {
  test.each([
    ['callTimeoutMs', () => createRedisProvider({ url: CLOSED, callTimeoutMs: ABOVE })],
    ['closeTimeoutMs', () => createRedisProvider({ url: CLOSED, closeTimeoutMs: ABOVE })],
    ['pollIntervalMs', () => createRedisProvider({ url: CLOSED, pollIntervalMs: ABOVE })],
    ['connectTimeoutMs', () => createRedisProvider({ url: CLOSED, connectTimeoutMs: ABOVE })],
    ['pollIntervalMs', () => createLockProvider(CLOSED, { adapter: { pollIntervalMs: ABOVE } })],
    ['callTimeoutMs', () => createLockProvider(CLOSED, { callTimeoutMs: ABOVE })],
  ])('%s is refused, naming the limit', async (name, make) => {
    const error = await rejection(Promise.resolve().then(make), String(name));
    expect(error).toMatchObject({ code: ErrorCode.InvalidArgument });
    expect(String(error)).toContain(name);
    expect(String(error)).toContain(`${MAX_TIMER_MS} ms`);
  });
});

const missing = await needLocalBinary('redis-server');
const server: RedisProcess | null = missing ? null : await startRedisProcess();
afterAll(() => server?.stop(), 30_000);

describe.skipIf(missing !== null)('commandTimeoutMs, whose 0 means none', () => {
  test('a value above the timer range means no per-command limit too: commands are not timed out after 1 ms', async () => {
    const locks = createRedisProvider({ url: server!.url, commandTimeoutMs: 2 ** 40 });
    try {
      for (let i = 0; i < 3; i++) {
        const lock = await within(locks.tryAcquire(`timer-range/${process.pid}/${i}`), 10_000, 'tryAcquire');
        expect(lock).not.toBeNull();
        await within(lock!.release(), 10_000, 'release');
      }
    } finally {
      await locks.close();
    }
  });
});
