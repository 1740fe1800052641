import { createLockProvider } from '@holdfast/core';
import { countedPass } from './counted.js';
import { childHolder, holdMany } from './hold-many.js';
import { HolderProcess } from './holder-process.js';
import { holdfastSubject } from './holdfast.js';
import { openAll } from './open-all.js';
import type { BenchSettings } from './settings.js';
import { lockRoundTrip, sideBySide } from './side-by-side.js';
import type { BenchRow } from './types.js';
import { httpRequests } from './wire-parsers.js';

/** ttl 20 s = a 10 s session renewed every 5 s: the window covers several renew periods. */
const TTL_MS = 20_000;

/**
 * A child process holds many locks in one prefix (measured alone: taking them, its CPU, its session
 * renews); then one provider works in that prefix and one in an empty prefix, side by side, while the
 * holder's CPU is measured again: what one provider's locks cost the others.
 */
export async function crowdedPrefixRows(urlFor: (prefix: string) => string, settings: BenchSettings): Promise<BenchRow[]> {
  const holder = HolderProcess.start(urlFor('full'), 'http');
  try {
    const renews = async (): Promise<number> => (await holderWire(holder)).requests['PUT /v1/session/renew'] ?? 0;
    const windowMs = settings.quick ? 1000 : 15_000;
    const plan = { count: settings.hold, ttlMs: TTL_MS, windowMs, budgetMs: settings.holdBudgetMs, concurrency: 64 };
    const calls = { metric: 'session renews per TTL', note: 'PUT /v1/session/renew the holder sent', perMs: TTL_MS, count: renews };
    const rows = await holdMany('holdfast consul', childHolder(holder), plan, calls);
    const taken = rows.find((row) => row.metric === 'locks taken')!.value;

    const group = `another provider holds ${taken} locks in the prefix`;
    const subjects = [
      { name: 'holdfast consul, empty prefix', prefix: 'empty' },
      { name: `holdfast consul, prefix with ${taken} held`, prefix: 'full' },
    ].map(({ name, prefix }) => ({ prefix, subject: holdfastSubject(name, () => createLockProvider(urlFor(prefix))) }));
    const cpuBefore = await childHolder(holder).cpuMicros();
    const wireBefore = await holderWire(holder);
    const started = performance.now();
    const compared = await sideBySide(
      group,
      await openAll(
        subjects.map(
          ({ subject }) =>
            () =>
              lockRoundTrip(subject),
        ),
      ),
      settings,
    );
    rows.push(...compared);
    const ms = performance.now() - started;
    const cpu = (await childHolder(holder).cpuMicros()) - cpuBefore;
    const received = (await holderWire(holder)).bytes - wireBefore.bytes;
    // sideBySide gives each subject throughputMs in all: the ops done in the crowded prefix.
    const opsInPrefix = (compared[1]!.value * settings.throughputMs) / 1000;
    const idle = `the idle holder of ${taken} locks`;
    const note = 'while the two providers above worked; its traffic relayed and counted in its own process';
    rows.push({ group, subject: idle, metric: 'CPU', value: (cpu / 1000 / ms) * 100, unit: '% of a core', note });
    rows.push({
      group,
      subject: idle,
      metric: 'bytes received per op',
      value: received / opsInPrefix,
      unit: 'bytes',
      note: 'per op of the provider in its prefix',
    });

    for (const { prefix, subject } of subjects) {
      const build = (url: string) => lockRoundTrip(holdfastSubject(subject.subject, () => createLockProvider(url)));
      rows.push(
        ...(await countedPass(subject.subject, urlFor(prefix), build, {
          group,
          requestsMetric: 'requests per op',
          parser: httpRequests,
          ops: settings.countedOps,
        })),
      );
    }
    return rows;
  } finally {
    await holder.kill(); // the bench removes its whole prefix afterwards
  }
}

async function holderWire(holder: HolderProcess): Promise<{ bytes: number; requests: Record<string, number> }> {
  const [bytes, ...json] = await holder.send('wire');
  return { bytes: Number(bytes), requests: JSON.parse(json.join(' ')) as Record<string, number> };
}
