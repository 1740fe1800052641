import { createLockProvider, ErrorCode, type Lock } from '@holdfast/core';
import { type HungListener, hungListener } from '@holdfast/test-harness/faults';
import { codeOf, timed, until } from '@holdfast/test-harness/helpers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll, describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { RedisNode } from '../src/redis-node.js';
import { providersClosedAfterEach } from './fixture.js';
import { quorumUrl } from './quorum-url.js';
import { type RedisProcess, startRedisProcess } from './redis-process.js';

// Every call keeps the caller's bounds whatever the server does: a host that accepts connections
// and never answers, or a server stopped with SIGSTOP (sockets open, nothing read).

const missing = await needLocalBinary('redis-server');
const server: RedisProcess | null = missing ? null : await startRedisProcess();
const hung: HungListener = await hungListener();
const three: RedisProcess[] = missing ? [] : await Promise.all([startRedisProcess(), startRedisProcess(), startRedisProcess()]);
afterAll(async () => {
  for (const each of [server, ...three]) each?.resume();
  await Promise.all([server?.stop(), hung.close(), ...three.map((each) => each.stop())]);
}, 30_000);

let keyCount = 0;
const newKey = (): string => `bounds/${process.pid}/${Date.now()}-${++keyCount}`;
const { providers, open } = providersClosedAfterEach(() => {
  for (const each of [server, ...three]) each?.resume();
});

describe('a host that accepts connections and never answers', { timeout: 30_000 }, () => {
  const url = `redis://${hung.address.host}:${hung.address.port}`;

  test("acquire({ waitMs: 2000 }) gives up at its deadline with a BackendError (the CLI's --wait 2s)", async () => {
    const locks = open({ url });
    const { ms, error } = await timed(locks.acquire(newKey(), { waitMs: 2000 }), 4000, 'acquire');
    expect(codeOf(error)).toBe(ErrorCode.Backend);
    expect(ms).toBeGreaterThanOrEqual(1900);
    expect(ms).toBeLessThan(2600);
    // Undoing the abandoned attempt does not wait for a server that was never reached: close() is quick.
    const closed = await timed(locks.close(), 6000, 'close');
    expect(closed.error).toBeUndefined();
    expect(closed.ms).toBeLessThan(500);
  });

  test('tryAcquire is bounded by callTimeoutMs, an aborted signal is honoured at once, inspect too', async () => {
    const locks = open({ url, callTimeoutMs: 500, connectTimeoutMs: 10_000 });
    const attempt = await timed(locks.tryAcquire(newKey()), 3000, 'tryAcquire');
    expect(codeOf(attempt.error)).toBe(ErrorCode.Backend);
    expect(attempt.ms).toBeLessThan(1000);
    const inspected = await timed(locks.inspect(newKey()), 3000, 'inspect');
    expect(codeOf(inspected.error)).toBe(ErrorCode.Backend);
    expect(inspected.ms).toBeLessThan(1000);
    const signal = AbortSignal.timeout(300);
    const aborted = await timed(locks.acquire(newKey(), { waitMs: 20_000, signal }), 3000, 'acquire with a signal');
    expect(codeOf(aborted.error)).toBe(ErrorCode.Aborted);
    expect(aborted.ms).toBeLessThan(800);
  });

  test('createLockProvider passes callTimeoutMs and closeTimeoutMs through', async () => {
    const locks = await createLockProvider(url, { callTimeoutMs: 300, closeTimeoutMs: 300, adapter: { connectTimeoutMs: 10_000 } });
    providers.push(locks);
    const attempt = await timed(locks.tryAcquire(newKey()), 3000, 'tryAcquire');
    expect(codeOf(attempt.error)).toBe(ErrorCode.Backend);
    expect(attempt.ms).toBeLessThan(700);
  });

  test('the handshake is bounded by connectTimeoutMs, then the provider fails fast and close() is quick', async () => {
    const locks = open({ url, connectTimeoutMs: 300 });
    const first = await timed(locks.tryAcquire(newKey()), 3000, 'first tryAcquire');
    expect(codeOf(first.error)).toBe(ErrorCode.Backend);
    expect(first.ms).toBeLessThan(800);
    expect(hung.openConnections).toBeGreaterThan(0);
    const closed = await timed(locks.close(), 3000, 'close');
    expect(closed.error).toBeUndefined();
    expect(closed.ms).toBeLessThan(500);
    await until(
      () => hung.openConnections === 0,
      300,
      () => `close() closes its connections to the hung host (${hung.openConnections} open)`,
      { everyMs: 10 },
    );
    expect(hung.openConnections).toBe(0);
  });
});

describe.skipIf(!server)('a server stopped with SIGSTOP', { timeout: 30_000 }, () => {
  test('tryAcquire fails within the command timeout (default 2 s) or callTimeoutMs, whichever is shorter', async () => {
    const plain = open({ url: server!.url });
    const quick = open({ url: server!.url, callTimeoutMs: 400 });
    // Connected before the pause.
    expect(await plain.inspect(newKey())).toBeNull();
    expect(await quick.inspect(newKey())).toBeNull();
    server!.pause();
    const byCommandTimeout = await timed(plain.tryAcquire(newKey()), 5000, 'tryAcquire, defaults');
    expect(codeOf(byCommandTimeout.error)).toBe(ErrorCode.Backend);
    expect(byCommandTimeout.ms).toBeGreaterThanOrEqual(1900);
    expect(byCommandTimeout.ms).toBeLessThan(2600);
    const byCallTimeout = await timed(quick.tryAcquire(newKey()), 3000, 'tryAcquire, callTimeoutMs 400');
    expect(codeOf(byCallTimeout.error)).toBe(ErrorCode.Backend);
    expect(byCallTimeout.ms).toBeLessThan(900);
    const waiting = await timed(quick.acquire(newKey(), { waitMs: 1000 }), 3000, 'acquire({ waitMs: 1000 })');
    expect(codeOf(waiting.error)).toBe(ErrorCode.Backend);
    expect(waiting.ms).toBeLessThan(1500);
  });

  test('a grant abandoned while the server was stopped is undone once it resumes: nothing is left held', async () => {
    const locks = open({ url: server!.url, callTimeoutMs: 300 });
    const observer = open({ url: server!.url });
    const key = newKey();
    expect(await observer.inspect(key)).toBeNull();
    server!.pause();
    const { error } = await timed(locks.tryAcquire(key), 3000, 'tryAcquire');
    expect(codeOf(error)).toBe(ErrorCode.Backend);
    server!.resume();
    // The queued grant script runs first, the release after it on the same connection.
    await until(async () => (await observer.inspect(key)) === null, 3000, 'the late grant is let go', { everyMs: 50 });
    expect(await observer.inspect(key), 'the late grant is still held').toBeNull();
    const next = await observer.tryAcquire(key);
    expect(next).not.toBeNull();
    await next!.release();
  });

  test('close() with a lock held on the stopped server returns within closeTimeoutMs and reports the lock lost', async () => {
    const locks = createRedisProvider({ url: server!.url, closeTimeoutMs: 800 });
    const lock = await locks.tryAcquire(newKey(), { ttlMs: 30_000 });
    expect(lock).not.toBeNull();
    server!.pause();
    const closed = await timed(locks.close(), 5000, 'close');
    expect(closed.error).toBeUndefined();
    expect(closed.ms).toBeLessThan(1500);
    expect(lock!.signal.aborted).toBe(true);
    expect(codeOf(lock!.signal.reason)).toBe(ErrorCode.Lost);
  });

  test("a node's close() stops waiting for QUIT when its signal aborts, however long the command timeout", async () => {
    const node = new RedisNode(
      'redis under test',
      { host: '127.0.0.1', port: server!.port },
      { db: 0, commandTimeoutMs: 10_000, connectTimeoutMs: 3000 },
    );
    await node.ready({ signal: AbortSignal.timeout(3000) });
    server!.pause();
    const closed = await timed(node.close(AbortSignal.timeout(200)), 5000, 'node close');
    expect(closed.error).toBeUndefined();
    expect(closed.ms).toBeLessThan(500);
  });
});

describe.skipIf(three.length === 0)('a quorum of 3 with nodes stopped with SIGSTOP', { timeout: 30_000 }, () => {
  const url = () => quorumUrl(three.map((each) => each.url));

  test('one node stopped does not hold up the majority: grant, renewal, isHeld and release answer well within the command timeout', async () => {
    const locks = open({ url: url() });
    const other = open({ url: url() });
    const key = newKey();
    expect(await other.inspect(key)).toBeNull();
    expect(await locks.inspect(key)).toBeNull();
    three[2]!.pause();
    let lock: Lock | null = null;
    const granted = await timed(
      locks.tryAcquire(key, { ttlMs: 600 }).then((taken) => (lock = taken)),
      3000,
      'tryAcquire',
    );
    expect(granted.error).toBeUndefined();
    // The majority's answer plus the 250 ms the third node gets, far below the 2 s command timeout.
    expect(granted.ms).toBeLessThan(700);
    expect(lock).not.toBeNull();
    const busy = await timed(other.tryAcquire(key), 3000, 'tryAcquire of the held key');
    expect(busy.error).toBeUndefined();
    expect(busy.ms).toBeLessThan(700);
    // Renewals every 200 ms keep the 600 ms lease alive although one node never answers.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(lock!.signal.aborted).toBe(false);
    const held = await timed(lock!.isHeld(), 3000, 'isHeld');
    expect(held.error).toBeUndefined();
    expect(held.ms).toBeLessThan(300);
    const released = await timed(lock!.release(), 3000, 'release');
    expect(released.error).toBeUndefined();
    expect(released.ms).toBeLessThan(300);
    expect(await other.tryAcquire(key)).not.toBeNull();
  });

  test('two nodes stopped: a BackendError within the command timeout, never "busy"', async () => {
    const locks = open({ url: url(), commandTimeoutMs: 500 });
    expect(await locks.inspect(newKey())).toBeNull();
    three[1]!.pause();
    three[2]!.pause();
    const attempt = await timed(locks.tryAcquire(newKey()), 3000, 'tryAcquire');
    expect(codeOf(attempt.error)).toBe(ErrorCode.Backend);
    expect(attempt.ms).toBeLessThan(900);
  });
});
