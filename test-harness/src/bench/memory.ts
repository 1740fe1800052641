import { createLockProvider } from '@holdfast/core';
import { contentionTable } from './contention.js';
import { handoffSideBySide, inProcessPair, phaseFor } from './handoff.js';
import { holdMany, inProcessHolder } from './hold-many.js';
import { holdfastSubject } from './holdfast.js';
import { openAll } from './open-all.js';
import { verrouMemorySubject } from './peers/verrou.js';
import { lockRoundTrip, sideBySide } from './side-by-side.js';
import { Steps } from './steps.js';
import type { BenchModule } from './types.js';

/** Holdfast's memory backend beside @verrou/core's memory store, in this process. */
export const memoryBench: BenchModule = {
  name: 'memory',
  async run(settings, log) {
    // Providers of one name share one store, as the locks of one process do.
    const store = `memory://bench-${Math.random().toString(36).slice(2, 8)}`;
    const holdfast = holdfastSubject('holdfast memory', () => createLockProvider(store));
    const subjects = [holdfast, verrouMemorySubject()];
    const steps = new Steps(log, settings.steps);
    await steps.run('uncontended', async () =>
      sideBySide('uncontended acquire+release', await openAll(subjects.map((subject) => () => lockRoundTrip(subject))), settings),
    );
    await steps.run('hand-off', async () =>
      handoffSideBySide(
        'hand-off latency',
        await openAll(subjects.map((subject) => () => inProcessPair(subject))),
        phaseFor(subjects),
        settings,
      ),
    );
    await steps.run('contention', () => contentionTable(subjects, settings));
    await steps.run('hold many', async () => {
      const provider = await createLockProvider(store);
      try {
        const plan = {
          count: settings.hold,
          ttlMs: 1500,
          windowMs: settings.quick ? 500 : 3000,
          budgetMs: settings.holdBudgetMs,
          concurrency: 500,
        };
        return await holdMany('holdfast memory', inProcessHolder(provider), plan);
      } finally {
        await provider.close();
      }
    });
    return { server: `in-process (node ${process.version})`, rows: steps.rows, failures: steps.failures };
  },
};
