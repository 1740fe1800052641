import { createLockProvider, ErrorCode } from '@holdfast/core';
import { codeOf, timed, until } from '@holdfast/test-harness/helpers';
import { ferretdbBinary, freePort } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createMongoProvider } from '../src/index.js';
import { testUrl } from './fixtures.js';
import { RestartableFerretdb } from './restartable-ferretdb.js';
import { SilentListener } from './silent-listener.js';

/** Allowance over a bound for timers, event loop turns and a busy 2-core machine. */
const SLACK_MS = 1_000;

/** Far above every bound under test: only a call that never settles reaches it. */
const HANG_MS = 30_000;

/** Open TCP sockets of this process (the driver's connections among them). */
function tcpSockets(): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === 'TCPSocketWrap').length;
}

describe('every call is bounded when nothing listens (closed loopback port)', () => {
  let url: string;
  beforeAll(async () => {
    url = testUrl(`mongodb://127.0.0.1:${await freePort()}/holdfast`);
  });

  test('creating a provider does not wait for the server', async () => {
    // Well below the 5 s a connection attempt could take: only the adapter module's import counts.
    const { ms, value } = await timed(createLockProvider(url), HANG_MS, 'createLockProvider');
    expect(ms).toBeLessThan(1_500);
    await value!.close();
  });

  test('tryAcquire fails with BackendError at once, with the default per-call timeout: a refused connection is an answer', async () => {
    const locks = createMongoProvider({ url });
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        const { ms, error } = await timed(locks.tryAcquire('closed/try'), HANG_MS, 'tryAcquire');
        expect(codeOf(error), String(error)).toBe(ErrorCode.Backend);
        expect(String(error)).toContain('refused');
        // The next refusal is seen at the driver's next heartbeat (500 ms while a command waits).
        expect(ms, `attempt ${attempt}`).toBeLessThan(1_000);
      }
    } finally {
      await locks.close();
    }
  });

  test('acquire({ waitMs: 1000 }) gives up at its deadline with the default per-call timeout', async () => {
    const locks = createMongoProvider({ url });
    try {
      const { ms, error } = await timed(locks.acquire('closed/wait', { waitMs: 1_000 }), HANG_MS, 'acquire');
      expect([ErrorCode.Backend, ErrorCode.Timeout], String(error)).toContain(codeOf(error));
      expect(ms).toBeLessThan(1_000 + SLACK_MS);
    } finally {
      await locks.close();
    }
  });

  test('an AbortSignal aborted at 500 ms ends a long acquire at once', async () => {
    const locks = createMongoProvider({ url });
    try {
      const signal = AbortSignal.timeout(500);
      const { ms, error } = await timed(
        locks.acquire('closed/abort', { waitMs: 30_000, signal, waitForBackend: true }),
        HANG_MS,
        'acquire',
      );
      expect(codeOf(error), String(error)).toBe(ErrorCode.Aborted);
      expect(ms).toBeLessThan(500 + SLACK_MS);
    } finally {
      await locks.close();
    }
  });
});

describe('every call is bounded against a server that accepts and never answers', () => {
  let silent: SilentListener;
  beforeAll(async () => {
    silent = await SilentListener.start();
  });
  afterAll(() => silent?.close());

  test('tryAcquire returns at the per-call timeout; close() leaves no connection open', async () => {
    const locks = createMongoProvider({
      url: testUrl(`mongodb://127.0.0.1:${silent.port}/holdfast`),
      callTimeoutMs: 1_000,
      closeTimeoutMs: 1_000,
    });
    const tried = await timed(locks.tryAcquire('silent/try'), HANG_MS, 'tryAcquire');
    expect(codeOf(tried.error), String(tried.error)).toBe(ErrorCode.Backend);
    expect(tried.ms).toBeLessThan(1_000 + SLACK_MS);
    const inspected = await timed(locks.inspect('silent/try'), HANG_MS, 'inspect');
    expect(codeOf(inspected.error), String(inspected.error)).toBe(ErrorCode.Backend);
    expect(inspected.ms).toBeLessThan(1_000 + SLACK_MS);
    const closed = await timed(locks.close(), HANG_MS, 'close');
    expect(closed.error).toBeUndefined();
    expect(closed.ms).toBeLessThan(1_000 + SLACK_MS);
    await until(
      () => silent.sockets.size === 0,
      2_000,
      () => `the driver's connections to the silent listener closed (${silent.sockets.size} open)`,
    );
  });
});

const ferretdbSkip = await needLocalBinary('ferretdb');
const ferretdb = await ferretdbBinary();

describe.skipIf(ferretdbSkip !== null)('a hung server (FerretDB stopped with SIGSTOP)', () => {
  let server: RestartableFerretdb;
  beforeAll(async () => {
    server = await RestartableFerretdb.start(ferretdb!);
  });
  afterAll(async () => {
    server?.thaw();
    await server?.stop();
  });

  test('tryAcquire, release and close() each return within their bound; the held lock is reported lost; no connection is left', async () => {
    const baseline = tcpSockets();
    const locks = createMongoProvider({ url: testUrl(server.url), callTimeoutMs: 1_000, closeTimeoutMs: 1_500 });
    const held = await locks.tryAcquire('hung/held');
    const other = await locks.tryAcquire('hung/other');
    expect(held).not.toBeNull();
    expect(other).not.toBeNull();
    server.freeze();
    try {
      const tried = await timed(locks.tryAcquire('hung/new'), HANG_MS, 'tryAcquire');
      expect(codeOf(tried.error), String(tried.error)).toBe(ErrorCode.Backend);
      expect(tried.ms).toBeLessThan(1_000 + SLACK_MS);
      const released = await timed(other!.release(), HANG_MS, 'release');
      expect(codeOf(released.error), String(released.error)).toBe(ErrorCode.Backend);
      expect(released.ms).toBeLessThan(1_000 + SLACK_MS);
      const closed = await timed(locks.close(), HANG_MS, 'close');
      expect(closed.error).toBeUndefined();
      expect(closed.ms).toBeLessThan(1_500 + SLACK_MS);
      // Its release could not be confirmed: the holder is told, not left believing it holds the lock.
      expect(held!.signal.aborted).toBe(true);
      // At once: left to the driver's own timeouts they would linger for seconds.
      await until(
        () => tcpSockets() <= baseline,
        300,
        () => `the driver's connections to the hung server closed (${tcpSockets() - baseline} left)`,
      );
    } finally {
      server.thaw();
    }
  });
});
