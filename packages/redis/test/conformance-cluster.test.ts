import { defineConformanceSuite } from '@holdfast/test-harness';
import { freePort } from '@holdfast/test-harness/servers';
import { describe } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { clusterOfTheFile } from './topology-servers.js';

const cluster = await clusterOfTheFile();

describe.skipIf(!cluster)('redis cluster (3 primaries, 3 replicas)', () => {
  defineConformanceSuite({
    name: 'redis (cluster)',
    forcedReleaseToldAtRenewal: { reason: 'plain-lock holders learn a forced release at their next renewal (docs/semantics-redis.md)' },
    createProvider: () => createRedisProvider({ url: cluster!.url }),
    child: { url: cluster!.url },
    // Closed ports: no seed answers, so every operation fails fast.
    createUnreachableProvider: async () => createRedisProvider({ url: `redis+cluster://127.0.0.1:${await freePort()}` }),
    faults: {
      unsupported:
        'a proxy cannot stand in front of a Cluster (its nodes hand out their own addresses); the Cluster fault tests (cluster-faults.test.ts) kill, pause and reshard real nodes',
    },
    shortTtlMs: 600,
    // A release message crosses the cluster bus to the subscriber's node, and six servers share the
    // machine: case 13 missed 300 ms by 8 ms once in CI.
    promptWakeMs: 400,
    slackMs: 1000,
  });
});
