import { defineConformanceSuite } from '@holdfast/test-harness';
import { addressOf, urlAt } from '@holdfast/test-harness/faults';
import { freePort } from '@holdfast/test-harness/servers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe } from 'vitest';
import { createRedisProvider } from '../src/index.js';

const redis = await useBackend('redis');

describe.skipIf(!redis.url)(`redis single node (${redis.label})`, () => {
  defineConformanceSuite({
    name: 'redis (single node)',
    forcedReleaseToldAtRenewal: { reason: 'plain-lock holders learn a forced release at their next renewal (docs/semantics-redis.md)' },
    createProvider: () => createRedisProvider({ url: redis.url! }),
    child: { url: redis.url! },
    // A closed port: connection refused at once, so every operation fails fast.
    createUnreachableProvider: async () => createRedisProvider({ url: `redis://127.0.0.1:${await freePort()}` }),
    faults: {
      server: addressOf(redis.url!),
      createProviderAt: (address, bounds) => createRedisProvider({ url: urlAt(redis.url!, address), ...bounds }),
    },
    shortTtlMs: 600,
    promptWakeMs: 300,
    slackMs: 1000,
  });
});
