import { ErrorCode } from '@holdfast/core';
import { codeOf, rejection, within } from '@holdfast/test-harness/helpers';
import { describe, expect, test } from 'vitest';
import { createRedisProvider, DEFAULT_PREFIX } from '../src/index.js';
import { QUORUM_ACQUIRE } from '../src/quorum-scripts.js';
import { INSPECT, QUORUM_RELEASE } from '../src/scripts.js';
import { providersClosedAfterEach, threeNodes } from './fixture.js';
import { quorumUrl } from './quorum-url.js';
import { onNode, type RedisProcess } from './redis-process.js';

// A quorum grant is handed out only once the nodes that decided it took its token (token-sync.ts).
// Node b refuses EVAL (renamed away), so the SYNC_TOKEN it gets fails every time, while the scripts
// loaded on it beforehand still run by EVALSHA.

const three = await threeNodes((i) => (i === 1 ? ['--rename-command', 'EVAL', ''] : []));
const { providers } = providersClosedAfterEach(() => {
  for (const node of three) node.resume();
});

describe.skipIf(three.length === 0)('a quorum of 3: a grant whose token a deciding node did not take', { timeout: 30_000 }, () => {
  test('is released everywhere and the attempt fails, instead of being handed out unfenced', async () => {
    const [a, b, c] = three as [RedisProcess, RedisProcess, RedisProcess];
    await onNode(b, async (client) => {
      for (const script of [QUORUM_ACQUIRE, QUORUM_RELEASE, INSPECT]) await script.load(client);
    });
    const locks = createRedisProvider({ url: quorumUrl(three.map((node) => node.url)) });
    providers.push(locks);
    const key = `quorum-sync-failure/${process.pid}/${Date.now()}`;
    const lockKey = `${DEFAULT_PREFIX}${key}`;
    await onNode(a, (client) => client.hset(`{${lockKey}}//fence`, 'fence', '1000000000'));
    await onNode(b, (client) => client.hset(`{${lockKey}}//fence`, 'fence', '1'));

    c.pause();
    // Decided by a and b; b's counter is behind a's, so b must take the token and cannot.
    const error = await within(rejection(locks.tryAcquire(key)), 5000, 'tryAcquire decided by a and b');
    expect(codeOf(error)).toBe(ErrorCode.Backend);
    expect(String((error as Error).message)).toMatch(/did not take the grant's token/);
    expect(await onNode(a, (client) => client.exists(lockKey)), 'a kept the grant').toBe(0);
    expect(await onNode(b, (client) => client.exists(lockKey)), 'b kept the grant').toBe(0);
  });
});
