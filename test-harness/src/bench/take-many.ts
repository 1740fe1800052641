import { benchKey } from './measure.js';
import type { BenchRow, LockSubject, Release } from './types.js';

/** How long a library takes `count` locks with one client, in batches of 500 (then releases them). */
export async function takeMany(subject: LockSubject, count: number, group: string): Promise<BenchRow> {
  const client = await subject.client();
  const key = (i: number): string => benchKey('take-many', subject.subject, i);
  const releases: Release[] = [];
  try {
    const started = performance.now();
    for (let start = 0; start < count; start += 500) {
      const batch = await Promise.all(Array.from({ length: Math.min(500, count - start) }, (_, i) => client.tryOnce(key(start + i))));
      if (batch.some((release) => release === null)) throw new Error(`${subject.subject}: some keys to take were busy`);
      releases.push(...(batch as Release[]));
    }
    const ms = performance.now() - started;
    return { group, subject: subject.subject, metric: 'time to take them', value: ms, unit: 'ms', note: 'no renewal' };
  } finally {
    for (let start = 0; start < releases.length; start += 500)
      await Promise.allSettled(releases.slice(start, start + 500).map((release) => release()));
    await client.close();
  }
}
