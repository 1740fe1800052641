import { createLockProvider } from '@holdfast/core';
import { benchServer } from './bench-server.js';
import { contentionTable } from './contention.js';
import { crossProcessPair } from './cross-process.js';
import { handoffSideBySide, inProcessPair, phaseFor } from './handoff.js';
import { childHolder, holdMany } from './hold-many.js';
import { HolderProcess } from './holder-process.js';
import { holdfastSubject } from './holdfast.js';
import { openAll } from './open-all.js';
import { lockRoundTrip, sideBySide } from './side-by-side.js';
import { Steps } from './steps.js';
import type { BenchModule } from './types.js';

/**
 * Holdfast alone on a SQL server (no peer or raw floor yet): throughput, hand-off, the contention
 * table and many locks held. Not in the default run, which stays within ~10 minutes: name it
 * (`npm run bench -- postgres mysql`). The server comes from HOLDFAST_BENCH_<KIND>_URL, else resolveBackend.
 */
export function sqlBench(kind: 'postgres' | 'mysql', wake: { pollPeriodMs: number; note: string }): BenchModule {
  return {
    name: kind,
    optional: true,
    async run(settings, log) {
      const server = await benchServer(kind);
      const holdfast = holdfastSubject(`holdfast ${kind}`, () => createLockProvider(server.url), wake);
      const steps = new Steps(log, settings.steps);
      try {
        await steps.run('uncontended', async () => sideBySide('uncontended acquire+release', [await lockRoundTrip(holdfast)], settings));
        await steps.run('hand-off', async () => {
          const pairs = await openAll([() => inProcessPair(holdfast), () => crossProcessPair(server.url, holdfast)]);
          return handoffSideBySide('hand-off latency', pairs, phaseFor([holdfast]), settings);
        });
        await steps.run('contention', () => contentionTable([holdfast], settings));
        await steps.run('hold many', async () => {
          const holder = HolderProcess.start(server.url);
          try {
            const plan = {
              count: settings.hold,
              ttlMs: 3000,
              windowMs: settings.quick ? 1000 : 6000,
              budgetMs: settings.holdBudgetMs,
              concurrency: 64,
            };
            return await holdMany(`holdfast ${kind}`, childHolder(holder), plan);
          } finally {
            await holder.kill(); // the leases run out on their own
          }
        });
        return { server: server.label, rows: steps.rows, failures: steps.failures };
      } finally {
        await server.stop();
      }
    },
  };
}

export const postgresBench = sqlBench('postgres', { pollPeriodMs: 0, note: 'woken by LISTEN/NOTIFY' });
export const mysqlBench = sqlBench('mysql', { pollPeriodMs: 250, note: "waiters poll, backing off to the adapter's default 250 ms" });
