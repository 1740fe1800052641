import type { LockProvider } from '@holdfast/core';
import { opsPerSecond, summarize } from './measure.js';
import type { BenchRow, ProviderFactory } from './types.js';

const runId = Math.random().toString(36).slice(2, 8);

/** Uncontended acquire + release on one key, one provider. */
export async function uncontended(subject: string, create: ProviderFactory, durationMs = 2000): Promise<BenchRow> {
  const provider = await create();
  const key = `holdfast-bench/${runId}/uncontended/${subject}`;
  try {
    const ops = await opsPerSecond(async () => {
      const lock = await provider.tryAcquire(key);
      if (!lock) throw new Error(`bench key ${key} unexpectedly busy`);
      await lock.release();
    }, durationMs);
    return { group: 'uncontended acquire+release', subject, metric: 'ops/s', value: ops, unit: 'ops/s' };
  } finally {
    await provider.close();
  }
}

/**
 * Handoff latency: a holder releases while another instance is waiting in acquire(); measures
 * release() start -> waiter holds the lock.
 */
export async function handoff(subject: string, create: ProviderFactory, rounds = 200): Promise<BenchRow[]> {
  const holder = await create();
  const waiter = await create();
  const key = `holdfast-bench/${runId}/handoff/${subject}`;
  const samples: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      const held = await holder.acquire(key, { waitMs: 30_000 });
      const waiting = waiter.acquire(key, { waitMs: 30_000 });
      await settle(waiting);
      const releasedAt = performance.now();
      await held.release();
      const next = await waiting;
      samples.push(performance.now() - releasedAt);
      await next.release();
    }
  } finally {
    await Promise.allSettled([holder.close(), waiter.close()]);
  }
  const { p50, p99 } = summarize(samples);
  return [
    { group: 'handoff latency', subject, metric: 'p50', value: p50, unit: 'ms' },
    { group: 'handoff latency', subject, metric: 'p99', value: p99, unit: 'ms' },
  ];
}

/** Gives a just-started acquire() time to reach its wait before the holder releases. */
async function settle(waiting: Promise<unknown>): Promise<void> {
  await Promise.race([waiting, new Promise((resolve) => setTimeout(resolve, 5))]);
}

/**
 * The cost of holding many locks with renewal: how long taking them takes, and the CPU time the
 * process spends over a window of several renewal periods while merely holding them.
 */
export async function holdMany(
  subject: string,
  create: ProviderFactory,
  { count = 10_000, ttlMs, windowMs }: { count?: number; ttlMs: number; windowMs: number },
  countBackendCalls?: () => Promise<number>,
): Promise<BenchRow[]> {
  const provider: LockProvider = await create();
  const prefix = `holdfast-bench/${runId}/many/${subject}`;
  try {
    const started = performance.now();
    const locks = [];
    for (let start = 0; start < count; start += 500) {
      const batch = Array.from({ length: Math.min(500, count - start) }, (_, i) => provider.tryAcquire(`${prefix}/${start + i}`, { ttlMs }));
      locks.push(...(await Promise.all(batch)));
    }
    const acquireMs = performance.now() - started;
    if (locks.some((lock) => lock === null)) throw new Error('holdMany: some keys were busy');
    const callsBefore = countBackendCalls ? await countBackendCalls() : 0;
    const cpuBefore = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const cpu = process.cpuUsage(cpuBefore);
    const calls = countBackendCalls ? (await countBackendCalls()) - callsBefore : undefined;
    const lost = locks.filter((lock) => lock!.signal.aborted).length;
    const rows: BenchRow[] = [
      { group: `hold ${count} locks`, subject, metric: 'acquire all', value: acquireMs, unit: 'ms' },
      {
        group: `hold ${count} locks`,
        subject,
        metric: 'CPU while holding',
        value: ((cpu.user + cpu.system) / 1000 / windowMs) * 100,
        unit: '% of a core',
        note: `window ${windowMs} ms, ttl ${ttlMs} ms, ${lost} lost`,
      },
    ];
    if (calls !== undefined) {
      rows.push({ group: `hold ${count} locks`, subject, metric: 'backend calls per TTL', value: (calls / windowMs) * ttlMs, unit: 'calls' });
    }
    // In batches, as they were taken: each call is bounded by callTimeoutMs, and 10k releases
    // queued at once would spend that budget waiting for a free connection.
    for (let start = 0; start < locks.length; start += 500) {
      await Promise.all(locks.slice(start, start + 500).map((lock) => lock!.release()));
    }
    return rows;
  } finally {
    await provider.close();
  }
}
