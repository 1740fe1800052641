import { defineConformanceSuite } from '@holdfast/test-harness';
import { freePorts, startRedisSet } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll, describe } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { quorumUrl } from './quorum-url.js';

const missing = await needLocalBinary('redis-server');
const set = missing ? null : await startRedisSet(3);
afterAll(() => set?.stop(), 60_000);

describe.skipIf(!set)('redis quorum of 3 local redis-server instances', () => {
  const url = set ? quorumUrl(set.urls) : '';
  defineConformanceSuite({
    name: 'redis (quorum of 3)',
    forcedReleaseToldAtRenewal: { reason: 'plain-lock holders learn a forced release at their next renewal (docs/semantics-redis.md)' },
    createProvider: () => createRedisProvider({ url }),
    child: { url },
    createUnreachableProvider: async () =>
      createRedisProvider({ url: quorumUrl((await freePorts(3)).map((port) => `redis://127.0.0.1:${port}`)) }),
    faults: { unsupported: 'a quorum has no single server to stall, hang or cut; the fault cases run against redis (single node)' },
    shortTtlMs: 600,
    promptWakeMs: 300,
    slackMs: 1000,
  });
});
