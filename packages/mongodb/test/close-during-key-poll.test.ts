import { timed, until } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { provider } from './fixtures.js';
import { commandWith, type MessageMatcher, StallProxy } from './stall-proxy.js';

const mongodb = await useBackend('mongodb');

/** Far beyond close's bound: a close that waits for the key poll's own timeout is caught. */
const CALL_MS = 20_000;
const CLOSE_MS = 500;
/** A close budget far above what close() needs against a server that answers. */
const LONG_CLOSE_MS = 3_000;
/** Allowance over close's bound for timers and a busy 2-core machine; well under CALL_MS. */
const SLACK_MS = 1_000;
/** How late the stalled server answers: longer than the test. */
const LATE_MS = 30_000;
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
/**
 * The key watch reads a waited key every 10 ms in its first second, a waiter's own attempt every
 * 250 ms (TEST_PARAMS): after a few reads of the key have gone through, the next one is a key poll.
 */
const READS_LET_THROUGH = 5;

function afterPassing(count: number, matches: MessageMatcher): MessageMatcher {
  let passed = 0;
  return (message) => matches(message) && passed++ >= count;
}

/**
 * Without change streams (FerretDB, standalone mongod) a waiter's key is read by the key watch. A
 * provider closed while that read hangs must end by closeTimeoutMs, not by the read's own timeout
 * (callTimeoutMs), and leave no connection behind.
 */
describe.skipIf(!mongodb.url)(`close() while a key poll hangs (${mongodb.label})`, () => {
  const url = mongodb.url!;
  let proxy: StallProxy;
  beforeAll(async () => {
    proxy = await StallProxy.start(Number(new URL(url).port));
  });
  afterAll(() => proxy?.close());

  test('a key poll that hangs alone does not hold close() up: close() ends once its own work is done', async () => {
    const key = `close-during-poll/${Date.now().toString(36)}`;
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    const holder = provider(url, { owner: 'holder' });
    const locks = provider(proxied.href, { owner: 'waiter', callTimeoutMs: CALL_MS, closeTimeoutMs: LONG_CLOSE_MS });
    try {
      expect(await holder.tryAcquire(key)).not.toBeNull();
      expect(await locks.tryAcquire(`${key}/own`)).not.toBeNull();
      // Only the key poll's connection stalls: the server answers everything else.
      const poll = proxy.holdNext(afterPassing(READS_LET_THROUGH, commandWith(['find'], key)), LATE_MS);
      const waiting = locks.acquire(key, { waitMs: LATE_MS }).catch((error: unknown) => error);
      await timed(poll.held, 5_000, 'a key poll sent');
      const closed = await timed(locks.close(), LATE_MS, 'close');
      console.info(
        `[close during a key poll, server answering] close() took ${Math.round(closed.ms)} ms (closeTimeoutMs ${LONG_CLOSE_MS})`,
      );
      expect(closed.error).toBeUndefined();
      expect(await holder.inspect(`${key}/own`), 'the lock close() had to free').toBeNull();
      // Waiting for the poll would take all of close's budget (its release, unlock and ping removal then never run).
      expect(closed.ms).toBeLessThan(LONG_CLOSE_MS / 2);
      await timed(waiting, 1_000, 'the waiter ended by close');
      await until(
        () => proxy.clientConnections === 0,
        500,
        () => `the provider's connections closed (${proxy.clientConnections} left)`,
      );
    } finally {
      await locks.close();
      await holder.close();
    }
  });

  test('close() ends by closeTimeoutMs and leaves no connection open', async () => {
    const key = `close-during-poll/${Date.now().toString(36)}`;
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    const holder = provider(url, { owner: 'holder' });
    const locks = provider(proxied.href, { owner: 'waiter', callTimeoutMs: CALL_MS, closeTimeoutMs: CLOSE_MS });
    try {
      expect(await holder.tryAcquire(key)).not.toBeNull();
      // The key watch reads the key's documents by `find`: a key poll is held, then the whole server stalls.
      const poll = proxy.holdNext(afterPassing(READS_LET_THROUGH, commandWith(['find'], key)), LATE_MS);
      const waiting = locks.acquire(key, { waitMs: LATE_MS }).catch((error: unknown) => error);
      await timed(poll.held, 5_000, 'a key poll sent');
      for (let i = 0; i < 200; i++) proxy.holdNext(commandWith(LOCK_COMMANDS, ''), LATE_MS);
      const closed = await timed(locks.close(), LATE_MS, 'close');
      console.info(`[close during a key poll] close() took ${Math.round(closed.ms)} ms (closeTimeoutMs ${CLOSE_MS})`);
      expect(closed.error).toBeUndefined();
      expect(closed.ms).toBeLessThan(CLOSE_MS + SLACK_MS);
      await timed(waiting, 1_000, 'the waiter ended by close');
      await until(
        () => proxy.clientConnections === 0,
        500,
        () => `the provider's connections closed (${proxy.clientConnections} left)`,
      );
    } finally {
      await locks.close();
      await holder.close();
    }
  });
});
