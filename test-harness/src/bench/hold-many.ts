import type { Lock, LockProvider } from '@holdfast/core';
import { HolderProcess } from './holder-process.js';
import { benchKey, sleep } from './measure.js';
import type { BenchRow } from './types.js';

export interface HoldPlan {
  readonly count: number;
  readonly ttlMs: number;
  /** How long the locks are merely held while CPU (and renewal calls) are counted. */
  readonly windowMs: number;
  /** Taking stops here, and the rows report how many were taken at what rate. */
  readonly budgetMs: number;
  /** tryAcquire calls in flight at once: what the server takes without the calls timing out. */
  readonly concurrency: number;
}

export interface Taken {
  readonly taken: number;
  readonly ms: number;
  /** Calls that failed while taking them (they are not retried), if any did. */
  readonly failure?: string;
}

/** What holds the locks: this process (memory) or a child process, measured alone. */
export interface ManyHolder {
  hold(prefix: string, plan: HoldPlan): Promise<Taken>;
  cpuMicros(): Promise<number>;
  lost(): Promise<number>;
}

/** Renewal traffic counted over the window: its name, and a count to take before and after. */
export interface CallCounter {
  readonly metric: string;
  readonly note?: string;
  /** The count's period, e.g. the TTL or the ping interval. */
  readonly perMs: number;
  count(): Promise<number>;
}

/**
 * The cost of holding many locks: how fast they are taken (up to the budget), then the holder's CPU
 * over a window of several renewal periods while it merely holds them, and its renewal calls.
 */
export async function holdMany(subject: string, holder: ManyHolder, plan: HoldPlan, calls?: CallCounter): Promise<BenchRow[]> {
  const group = `hold ${plan.count} locks`;
  const { taken, ms, failure } = await holder.hold(benchKey('many', subject), plan);
  const callsBefore = await calls?.count();
  const cpuBefore = await holder.cpuMicros();
  const started = performance.now();
  await sleep(plan.windowMs);
  const cpu = (await holder.cpuMicros()) - cpuBefore;
  const windowMs = performance.now() - started;
  const callsAfter = await calls?.count();
  const lost = await holder.lost();
  const stopped =
    [taken < plan.count ? `stopped at the ${plan.budgetMs / 1000} s budget` : '', failure ?? ''].filter(Boolean).join('; ') || undefined;
  const rows: BenchRow[] = [
    { group, subject, metric: 'locks taken', value: taken, unit: 'locks', ...(stopped ? { note: stopped } : {}) },
    { group, subject, metric: 'time to take them', value: ms, unit: 'ms' },
    {
      group,
      subject,
      metric: 'take rate',
      value: taken / (ms / 1000),
      unit: 'locks/s',
      note: `${plan.concurrency} tryAcquire calls in flight`,
    },
    {
      group,
      subject,
      metric: 'CPU while holding',
      value: (cpu / 1000 / windowMs) * 100,
      unit: '% of a core',
      note: `window ${Math.round(windowMs)} ms, ttl ${plan.ttlMs} ms, ${lost} lost`,
    },
  ];
  if (calls && callsBefore !== undefined && callsAfter !== undefined) {
    const value = ((callsAfter - callsBefore) / windowMs) * calls.perMs;
    rows.push({ group, subject, metric: calls.metric, value, unit: 'calls', ...(calls.note ? { note: calls.note } : {}) });
  }
  return rows;
}

/** Many locks held by a provider of this process (the memory backend, which other processes cannot share). */
export function inProcessHolder(provider: LockProvider): ManyHolder {
  const held: Lock[] = [];
  return {
    async hold(prefix, plan) {
      // One lock first, untimed: a fresh collection or table is created on first use.
      await provider
        .tryAcquire(`${prefix}/warm-up`)
        .then((lock) => lock?.release())
        .catch(() => undefined); // a failure here shows again in the timed part
      const started = performance.now();
      let next = 0;
      let failures = 0;
      let firstFailure: string | undefined;
      const worker = async (): Promise<void> => {
        while (next < plan.count && performance.now() - started < plan.budgetMs) {
          const key = `${prefix}/${next++}`;
          try {
            const lock = await provider.tryAcquire(key, { ttlMs: plan.ttlMs });
            if (!lock) throw new Error(`${key} was busy`);
            held.push(lock);
          } catch (error) {
            failures++;
            firstFailure ??= (error as Error).message;
            await sleep(50); // a server that times out is not hammered further
          }
        }
      };
      await Promise.all(Array.from({ length: plan.concurrency }, worker));
      const failure = firstFailure ? `${failures} tryAcquire calls failed, the first: ${firstFailure}` : undefined;
      return { taken: held.length, ms: performance.now() - started, ...(failure ? { failure } : {}) };
    },
    cpuMicros: async () => {
      const { user, system } = process.cpuUsage();
      return user + system;
    },
    lost: async () => held.filter((lock) => lock.signal.aborted).length,
  };
}

/** Many locks held by a child process (holder-child.ts), so that its CPU is its own. */
export function childHolder(child: HolderProcess): ManyHolder {
  return {
    async hold(prefix, plan) {
      const [taken, ms, ...failure] = await child.send(
        `hold ${prefix} ${plan.count} ${plan.ttlMs} ${plan.budgetMs} ${plan.concurrency}`,
        plan.budgetMs + 120_000,
      );
      return { taken: Number(taken), ms: Number(ms), ...(failure.length > 0 ? { failure: failure.join(' ') } : {}) };
    },
    cpuMicros: async () => Number((await child.send('cpu'))[0]),
    lost: async () => Number((await child.send('lost'))[0]),
  };
}

/**
 * holdMany by a child process of its own on `url` (childHolder), killed afterwards without releasing:
 * its locks end with its lease or session.
 */
export async function holdManyInChild(url: string, subject: string, plan: HoldPlan, calls: CallCounter): Promise<BenchRow[]> {
  const holder = HolderProcess.start(url);
  try {
    return await holdMany(subject, childHolder(holder), plan, calls);
  } finally {
    await holder.kill();
  }
}
