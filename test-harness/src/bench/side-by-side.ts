import { benchKey } from './measure.js';
import type { BenchSettings } from './settings.js';
import type { BenchRow, LockSubject } from './types.js';

/** One subject of a throughput comparison: one acquire + release, and how to free what it keeps open. */
export interface RoundTrip {
  readonly subject: string;
  readonly note?: string;
  run(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Ops/s of several subjects measured in alternating slices, so that load from elsewhere on the
 * machine (other work, shared CI runners) hits them all alike and their ratios stay meaningful.
 */
export async function sideBySide(group: string, subjects: RoundTrip[], settings: BenchSettings): Promise<BenchRow[]> {
  const counts = subjects.map(() => 0);
  const spent = subjects.map(() => 0);
  const { sliceMs, throughputMs } = settings;
  try {
    for (const subject of subjects) await runFor(subject, Math.min(200, throughputMs / 4));
    for (let round = 0; round < Math.max(1, Math.round(throughputMs / sliceMs)); round++) {
      for (const [i, subject] of subjects.entries()) {
        const slice = await runFor(subject, sliceMs);
        counts[i]! += slice.count;
        spent[i]! += slice.ms;
      }
    }
  } finally {
    await Promise.allSettled(subjects.map((subject) => subject.close()));
  }
  return subjects.map(({ subject, note }, i) => ({
    group,
    subject,
    metric: 'ops/s',
    value: counts[i]! / (spent[i]! / 1000),
    unit: 'ops/s',
    note: [note, `alternating ${sliceMs} ms slices`].filter(Boolean).join('; '),
  }));
}

async function runFor(subject: RoundTrip, ms: number): Promise<{ count: number; ms: number }> {
  const start = performance.now();
  let count = 0;
  while (performance.now() - start < ms) {
    await subject.run();
    count++;
  }
  return { count, ms: performance.now() - start };
}

/** Uncontended acquire + release of a lock library on a key of its own. */
export async function lockRoundTrip(subject: LockSubject): Promise<RoundTrip> {
  const client = await subject.client();
  const key = benchKey('uncontended', subject.subject);
  return {
    subject: subject.subject,
    ...(subject.note ? { note: subject.note } : {}),
    async run() {
      const release = await client.tryOnce(key);
      if (!release) throw new Error(`bench key ${key} unexpectedly busy`);
      await release();
    },
    close: () => client.close(),
  };
}
