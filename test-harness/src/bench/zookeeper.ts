import { createLockProvider } from '@holdfast/core';
import { benchServer } from './bench-server.js';
import { contentionTable } from './contention.js';
import { crossProcessPair } from './cross-process.js';
import { handoffSideBySide, inProcessPair, phaseFor } from './handoff.js';
import { holdfastSubject } from './holdfast.js';
import { openAll } from './open-all.js';
import { lockRoundTrip, sideBySide } from './side-by-side.js';
import { Steps } from './steps.js';
import type { BenchModule } from './types.js';
import { zookeeperHoldManyRows } from './zookeeper-hold-many.js';
import { rawRecipe, rawZookeeper } from './zookeeper-raw.js';

/**
 * Holdfast on a ZooKeeper server beside the bare round trips of the lock recipe, in one run. Not in
 * the default run (name it: `npm run bench -- zookeeper`). The server comes from
 * HOLDFAST_BENCH_ZOOKEEPER_URL, else resolveBackend('zookeeper') (a standalone server on a free port).
 */
export const zookeeperBench: BenchModule = {
  name: 'zookeeper',
  optional: true,
  async run(settings, log) {
    const server = await benchServer('zookeeper');
    const servers = /^zookeeper:\/\/([^/?]+)/.exec(server.url)?.[1];
    if (!servers) throw new Error(`cannot read the servers of ${server.url}`);
    // The packet counts are read from the first member (mntr), which the harness starts on loopback.
    const firstPort = Number(/:(\d+)$/.exec(servers.split(',')[0]!)?.[1]);
    const url = `zookeeper://${servers}/holdfast-bench-${Math.random().toString(36).slice(2, 8)}`;
    const raw = await rawZookeeper(servers);
    try {
      const holdfast = holdfastSubject('holdfast zookeeper', () => createLockProvider(url), { note: 'waiters watch their predecessor' });
      const steps = new Steps(log, settings.steps);
      await steps.run('uncontended', async () =>
        sideBySide('uncontended acquire+release', [await rawRecipe(raw), await lockRoundTrip(holdfast)], settings),
      );
      await steps.run('hand-off', async () => {
        const pairs = await openAll([() => inProcessPair(holdfast), () => crossProcessPair(url, holdfast)]);
        return handoffSideBySide('hand-off latency', pairs, phaseFor([holdfast]), settings);
      });
      await steps.run('contention', () => contentionTable([holdfast], settings));
      await steps.run('hold many', () => zookeeperHoldManyRows(url, firstPort, settings));
      return { server: `ZooKeeper (${server.label})`, rows: steps.rows, failures: steps.failures };
    } finally {
      raw.close();
      await server.stop();
    }
  },
};
