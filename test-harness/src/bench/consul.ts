import { createLockProvider } from '@holdfast/core';
import { benchServer } from './bench-server.js';
import { crowdedPrefixRows } from './consul-prefix.js';
import { ConsulHttp, rawGoProtocol, rawTxn } from './consul-raw.js';
import { contentionTable } from './contention.js';
import { crossProcessPair } from './cross-process.js';
import { handoffSideBySide, inProcessPair, phaseFor } from './handoff.js';
import { holdfastSubject } from './holdfast.js';
import { openAll } from './open-all.js';
import { lockRoundTrip, sideBySide } from './side-by-side.js';
import { Steps } from './steps.js';
import type { BenchModule } from './types.js';

/**
 * Holdfast on a Consul agent beside the bare HTTP round trips a lock needs, in one run. Consul comes
 * from HOLDFAST_BENCH_CONSUL_URL (consul://host:port), else resolveBackend('consul') (a dev agent).
 */
export const consulBench: BenchModule = {
  name: 'consul',
  async run(settings, log) {
    const server = await benchServer('consul');
    const http = new ConsulHttp(`http://${new URL(server.url).host}`);
    const prefix = `holdfast-bench-${Math.random().toString(36).slice(2, 8)}`;
    const urlFor = (name: string): string => `${server.url}?lockDelay=1s&prefix=${prefix}/${name}`;
    try {
      const version = ((await http.call('GET', '/v1/agent/self')) as { Config?: { Version?: string } }).Config?.Version ?? 'unknown';
      const holdfast = holdfastSubject('holdfast consul', () => createLockProvider(urlFor('main')));
      const steps = new Steps(log, settings.steps);
      await steps.run('uncontended', async () => {
        const session = await http.createSession();
        try {
          return await sideBySide(
            'uncontended acquire+release',
            [rawTxn(http, session), rawGoProtocol(http, session), await lockRoundTrip(holdfast)],
            settings,
          );
        } finally {
          await http.call('PUT', `/v1/session/destroy/${session}`);
        }
      });
      await steps.run('hand-off', async () => {
        const pairs = await openAll([() => inProcessPair(holdfast), () => crossProcessPair(urlFor('main'), holdfast)]);
        return handoffSideBySide('hand-off latency', pairs, phaseFor([holdfast]), settings);
      });
      await steps.run('contention', () => contentionTable([holdfast], settings));
      await steps.run('hold many, and a provider working beside them', () => crowdedPrefixRows(urlFor, settings));
      return { server: `consul ${version} (${server.label})`, rows: steps.rows, failures: steps.failures };
    } finally {
      await http.call('DELETE', `/v1/kv/${prefix}?recurse`).catch(() => undefined);
      http.close();
      await server.stop();
    }
  },
};
