import type { LockProvider } from '@holdfast/core';
import { until, within } from '@holdfast/test-harness/helpers';
import { describe, expect, test } from 'vitest';
import { DEFAULT_PREFIX } from '../src/index.js';
import { providersClosedAfterEach, threeNodes } from './fixture.js';
import { quorumUrl } from './quorum-url.js';
import { onNode, type RedisProcess } from './redis-process.js';

// Tokens of a quorum's slots and read-write grants share the key's sequence with its plain locks
// (informational, fencing 'none', but increasing): a grant decided by one majority brings the
// counters of the nodes that granted it up to its token (TokenSync), so that the next grant, decided
// by another set that shares a node with it, counts past it. Nodes are paused with SIGSTOP to choose
// which nodes decide, and one node counts far ahead, as after a restart that started its counter afresh.

const three = await threeNodes();

/** Generous: a paused node's commands wait for it, the others answer in a round trip or two. */
const CALL_MS = 5000;

let keyCount = 0;
const newKey = (): string => `quorum-share-tokens/${process.pid}/${Date.now()}-${++keyCount}`;
const tracked = providersClosedAfterEach(() => {
  for (const node of three) node.resume();
});
const open = (): LockProvider => tracked.open({ url: quorumUrl(three.map((node) => node.url)) });

describe.skipIf(three.length === 0)('a quorum of 3: slot and read-write tokens', { timeout: 30_000 }, () => {
  test('a slot decided by a and b, then a reader decided by b and c, then a lock: tokens increase, and holders() shows the holder its token', async () => {
    const [a, , c] = three as [RedisProcess, RedisProcess, RedisProcess];
    const locks = open();
    const key = newKey();
    const lockKey = `${DEFAULT_PREFIX}${key}`;
    const warmUp = await within(locks.tryAcquire(key), CALL_MS, 'first grant');
    await within(warmUp!.release(), CALL_MS, 'release');
    await onNode(a, (client) => client.hincrby(`{${lockKey}}//fence`, 'fence', 1_000_000_000));

    c.pause();
    const slot = await within(locks.semaphore(key, 1).tryAcquire(), CALL_MS, 'a slot decided by a and b');
    expect(slot, 'a free slot').not.toBeNull();
    expect(slot!.token > warmUp!.token + 1_000_000_000n, `slot token ${slot!.token} is not a's counter`).toBe(true);
    c.resume();
    const holders = await within(locks.semaphore(key, 1).holders(), CALL_MS, 'holders()');
    expect(
      holders.map((holder) => holder.token),
      'holders() reports another token than the slot holder has',
    ).toEqual([slot!.token]);
    await within(slot!.release(), CALL_MS, 'release of the slot');
    // c ran the queued take and then the release (sent after it): the key is gone there.
    await until(async () => (await onNode(c, (client) => client.exists(lockKey))) === 0, CALL_MS, 'the slot gone from c');

    a.pause();
    const reader = await within(locks.readWrite(key).tryRead(), CALL_MS, 'a reader decided by b and c');
    expect(reader, 'a free read-write lock').not.toBeNull();
    expect(reader!.token > slot!.token, `reader token ${reader!.token} after slot token ${slot!.token}`).toBe(true);
    await within(reader!.release(), CALL_MS, 'release of the reader');
    a.resume();
    await until(async () => (await onNode(a, (client) => client.exists(lockKey))) === 0, CALL_MS, 'the reader gone from a');

    const lock = await within(locks.tryAcquire(key), CALL_MS, 'a plain lock');
    expect(lock!.token > reader!.token, `lock token ${lock!.token} after reader token ${reader!.token}`).toBe(true);
    await within(lock!.release(), CALL_MS, 'release of the lock');
  });
});
