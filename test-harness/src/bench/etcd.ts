import { createLockProvider } from '@holdfast/core';
import { benchServer } from './bench-server.js';
import { contentionTable } from './contention.js';
import { crossProcessPair } from './cross-process.js';
import { etcdHoldManyRows } from './etcd-hold-many.js';
import { EtcdHttp, rawMutex } from './etcd-raw.js';
import { handoffSideBySide, inProcessPair, phaseFor } from './handoff.js';
import { holdfastSubject } from './holdfast.js';
import { openAll } from './open-all.js';
import { lockRoundTrip, sideBySide } from './side-by-side.js';
import { Steps } from './steps.js';
import type { BenchModule } from './types.js';

/**
 * Holdfast on one etcd member beside the bare round trips of etcd's own mutex, in one run. Not in the
 * default run (name it: `npm run bench -- etcd`). etcd comes from HOLDFAST_BENCH_ETCD_URL, else
 * resolveBackend('etcd') (a member started on free loopback ports).
 */
export const etcdBench: BenchModule = {
  name: 'etcd',
  optional: true,
  async run(settings, log) {
    const server = await benchServer('etcd');
    const endpoint = /^etcd:\/\/([^,/?]+)/.exec(server.url)?.[1];
    if (!endpoint) throw new Error(`cannot read the first member of ${server.url}`);
    const http = new EtcdHttp(`http://${endpoint}`);
    const prefix = `holdfast-bench-${Math.random().toString(36).slice(2, 8)}`;
    const url = `etcd://${endpoint}/${prefix}`;
    let lease: string | undefined;
    try {
      const version = String((await http.call('/v3/maintenance/status', {}))['version'] ?? 'unknown');
      const holdfast = holdfastSubject('holdfast etcd', () => createLockProvider(url), { note: 'waiters watch their predecessor' });
      const steps = new Steps(log, settings.steps);
      await steps.run('uncontended', async () => {
        lease = await http.grantLease();
        return sideBySide('uncontended acquire+release', [rawMutex(http, lease), await lockRoundTrip(holdfast)], settings);
      });
      await steps.run('hand-off', async () => {
        const pairs = await openAll([() => inProcessPair(holdfast), () => crossProcessPair(url, holdfast)]);
        return handoffSideBySide('hand-off latency', pairs, phaseFor([holdfast]), settings);
      });
      await steps.run('contention', () => contentionTable([holdfast], settings));
      await steps.run('hold many', () => etcdHoldManyRows(url, http, settings));
      return { server: `etcd ${version} (${server.label})`, rows: steps.rows, failures: steps.failures };
    } finally {
      if (lease) await http.call('/v3/lease/revoke', { ID: lease }).catch(() => undefined);
      http.close();
      await server.stop();
    }
  },
};
