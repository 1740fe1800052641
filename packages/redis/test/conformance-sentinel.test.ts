import { defineConformanceSuite } from '@holdfast/test-harness';
import { freePort } from '@holdfast/test-harness/servers';
import { describe } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { sentinelOfTheFile } from './topology-servers.js';

const sentinel = await sentinelOfTheFile();

describe.skipIf(!sentinel)('redis sentinel (primary, replica, 3 Sentinels)', () => {
  defineConformanceSuite({
    name: 'redis (sentinel)',
    forcedReleaseToldAtRenewal: { reason: 'plain-lock holders learn a forced release at their next renewal (docs/semantics-redis.md)' },
    createProvider: () => createRedisProvider({ url: sentinel!.url }),
    child: { url: sentinel!.url },
    // Closed ports: no Sentinel answers, so every operation fails fast.
    createUnreachableProvider: async () => createRedisProvider({ url: `redis+sentinel://127.0.0.1:${await freePort()}/mymaster` }),
    faults: {
      unsupported:
        'a proxy cannot stand in front of the data nodes (the Sentinels hand out their addresses); the Sentinel fault tests (sentinel-faults.test.ts) kill, pause and fail over real nodes',
    },
    shortTtlMs: 600,
    promptWakeMs: 300,
    slackMs: 1000,
  });
});
