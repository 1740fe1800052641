import { createServer, type Server } from 'node:net';
import { createLockProvider, ErrorCode } from '@holdfast/core';
import { codeOf, rejection, within } from '@holdfast/test-harness/helpers';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

/**
 * Every backend's URL parser, through createLockProvider as an app calls it: a bad URL is an
 * InvalidArgumentError (a typed error with a code, never a TypeError) before anything is sent. The
 * host:port of each URL is a loopback listener that counts connections: it must see none.
 */
let listener: Server;
let port = 0;
let connections = 0;
beforeAll(async () => {
  listener = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  port = (listener.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => listener.close(() => resolve()));
});

type BadUrl = readonly [backend: string, why: string, url: (port: number) => string];

const BAD_URLS: readonly BadUrl[] = [
  ['memory', 'a query', () => 'memory:?ttl=1'],
  ['redis', 'an unknown parameter', (p) => `redis://127.0.0.1:${p}?pollInterval=1s`],
  ['redis', 'a repeated parameter', (p) => `redis://127.0.0.1:${p}?prefix=a:&prefix=b:`],
  ['redis', 'port 0', () => 'redis://127.0.0.1:0'],
  ['redis', 'a db that is no number', (p) => `redis://127.0.0.1:${p}/first`],
  ['consul', 'an unknown parameter', (p) => `consul://127.0.0.1:${p}?bogus=1`],
  ['consul', 'a repeated parameter', (p) => `consul://127.0.0.1:${p}?lockDelay=1s&lockDelay=2s`],
  ['consul', 'a duration that is no duration', (p) => `consul://127.0.0.1:${p}?lockDelay=soon`],
  ['mongodb', 'an unknown holdfast parameter', (p) => `mongodb://127.0.0.1:${p}/db?holdfastBogus=1`],
  ['mongodb', 'a repeated holdfast parameter', (p) => `mongodb://127.0.0.1:${p}/db?holdfastPollInterval=1s&holdfastPollInterval=2s`],
  ['postgres', 'pollInterval=0', (p) => `postgres://u@127.0.0.1:${p}/db?pollInterval=0`],
  ['postgres', 'connectTimeout=0', (p) => `postgres://u@127.0.0.1:${p}/db?connectTimeout=0`],
  ['postgres', 'sslmode=bogus', (p) => `postgres://u@127.0.0.1:${p}/db?sslmode=bogus`],
  ['postgres', 'a repeated parameter', (p) => `postgres://u@127.0.0.1:${p}/db?table=a&table=b`],
  ['postgres', 'a repeated driver parameter', (p) => `postgres://u@127.0.0.1:${p}/db?sslmode=disable&sslmode=require`],
  ['postgres', 'port 0', () => 'postgres://u@127.0.0.1:0/db'],
  ['postgres', 'an unknown mode', (p) => `postgres://u@127.0.0.1:${p}/db?mode=advisory`],
  ['mysql', 'pollInterval=0', (p) => `mysql://u@127.0.0.1:${p}/db?pollInterval=0`],
  ['mysql', 'connectTimeout=0', (p) => `mysql://u@127.0.0.1:${p}/db?connectTimeout=0`],
  ['mysql', 'charset=bogus', (p) => `mysql://u@127.0.0.1:${p}/db?charset=bogus`],
  ['mysql', 'port 0', () => 'mysql://u@127.0.0.1:0/db'],
  ['mysql', 'a repeated parameter', (p) => `mysql://u@127.0.0.1:${p}/db?pollInterval=1s&pollInterval=2s`],
  ['mysql', 'an unknown parameter', (p) => `mysql://u@127.0.0.1:${p}/db?multipleStatements=true`],
];

describe('a bad URL is refused with a typed error before anything is sent', () => {
  test.each(BAD_URLS)('%s: %s', async (_backend, _why, url) => {
    const before = connections;
    const refused = await within(rejection(createLockProvider(url(port))), 5000, 'createLockProvider of a bad URL');
    expect(codeOf(refused), String(refused)).toBe(ErrorCode.InvalidArgument);
    // Whatever a broken parser had started, it had the time to reach the listener by now.
    await new Promise((resolve) => setImmediate(resolve));
    expect(connections - before, 'the bad URL reached the server').toBe(0);
  });

  test('the counting listener does count: a good URL that is used reaches it', async () => {
    const before = connections;
    const provider = await createLockProvider(`redis://127.0.0.1:${port}`, { callTimeoutMs: 1000 });
    await within(rejection(provider.inspect('k')), 5000, 'inspect through the counting listener');
    await within(provider.close(), 5000, 'close');
    expect(connections - before).toBeGreaterThan(0);
  });
});
