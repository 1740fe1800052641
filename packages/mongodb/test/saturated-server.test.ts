import { ErrorCode } from '@holdfast/core';
import { codeOf, timed, until } from '@holdfast/test-harness/helpers';
import { ferretdbBinary } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createMongoProvider } from '../src/index.js';
import { testUrl } from './fixtures.js';
import { RestartableFerretdb } from './restartable-ferretdb.js';
import { commandWith, StallProxy } from './stall-proxy.js';

const CALL_MS = 1_000;
const CLOSE_MS = 1_500;
/** Allowance over a bound for timers, event loop turns and a busy 2-core machine. */
const SLACK_MS = 1_000;
/** How late the saturated server answers a lock command: far beyond every bound under test. */
const LATE_MS = 20_000;
/** Everything the adapter sends about locks; hello (the driver's monitor) is not held, so the server looks alive. */
const LOCK_COMMANDS = [
  'findAndModify',
  'find',
  'update',
  'insert',
  'delete',
  'aggregate',
  'count',
  'getMore',
  'killCursors',
  'endSessions',
];

const ferretdbSkip = await needLocalBinary('ferretdb');
const ferretdb = await ferretdbBinary();

/**
 * A saturated server, unlike a SIGSTOPped one, still answers the driver's heartbeats: the driver sees a
 * healthy server, never clears its pool, and its operations wait in the server's queue. With
 * socketTimeoutMS=0 (a common setting) nothing in the driver bounds them: only the adapter and core do.
 */
describe.skipIf(ferretdbSkip !== null)('a saturated server: heartbeats answered, lock commands 20 s late', () => {
  let server: RestartableFerretdb;
  let proxy: StallProxy;
  beforeAll(async () => {
    server = await RestartableFerretdb.start(ferretdb!);
    proxy = await StallProxy.start(server.port);
  });
  afterAll(async () => {
    await proxy?.close();
    await server?.stop();
  });

  test('every public call and close() end at their bound, and close() leaves no connection to the server', async () => {
    const url = testUrl(server.url.replace(`:${server.port}`, `:${proxy.port}`), 'holdfastLockExpiration=60s&socketTimeoutMS=0');
    const locks = createMongoProvider({ url, callTimeoutMs: CALL_MS, closeTimeoutMs: CLOSE_MS });
    const held = await locks.tryAcquire('saturated/held');
    expect(held).not.toBeNull();
    const lockCommand = commandWith(LOCK_COMMANDS, '');
    for (let i = 0; i < 200; i++) proxy.holdNext(lockCommand, LATE_MS);
    // Commands queued behind each other, as on the bench's saturated server.
    const queued = Array.from({ length: 20 }, (_, i) => locks.tryAcquire(`saturated/queued-${i}`).catch(() => null));
    const calls: Record<string, () => Promise<unknown>> = {
      tryAcquire: () => locks.tryAcquire('saturated/new'),
      extend: () => held!.extend(30_000),
      inspect: () => locks.inspect('saturated/held'),
      list: () => locks.list({ prefix: 'saturated/' }),
      release: () => held!.release(),
    };
    for (const [name, call] of Object.entries(calls)) {
      const { ms, error } = await timed(call(), LATE_MS, name);
      expect(codeOf(error), `${name}: ${String(error)}`).toBe(ErrorCode.Backend);
      expect(ms, name).toBeLessThan(CALL_MS + SLACK_MS);
    }
    const waited = await timed(locks.acquire('saturated/waited', { waitMs: 2_000 }), LATE_MS, 'acquire');
    expect([ErrorCode.Backend, ErrorCode.Timeout], String(waited.error)).toContain(codeOf(waited.error));
    expect(waited.ms).toBeLessThan(2_000 + SLACK_MS);
    await timed(Promise.all(queued), LATE_MS, 'the queued tryAcquire calls');
    expect(proxy.clientConnections).toBeGreaterThan(0);
    const closed = await timed(locks.close(), LATE_MS, 'close');
    expect(closed.error).toBeUndefined();
    expect(closed.ms).toBeLessThan(CLOSE_MS + SLACK_MS);
    // At once, not when the server gets round to the queued commands 20 s later.
    await until(
      () => proxy.clientConnections === 0,
      500,
      () => `the driver's connections closed (${proxy.clientConnections} left)`,
    );
  });
});
