import type { RoundTrip } from './side-by-side.js';
import type { BenchRow } from './types.js';
import { type RequestParser, type WireCounts, WireTap, wireDelta } from './wire-tap.js';

export interface CountedPass {
  readonly group: string;
  /** The name of the requests-per-op row, e.g. "commands per acquire+release". */
  readonly requestsMetric: string;
  readonly parser: RequestParser;
  readonly ops: number;
}

/**
 * A subject's traffic per uncontended acquire + release, counted on the wire: the subject is built on
 * a URL that goes through a WireTap (separately from the throughput slices, which the relay would slow).
 */
export async function countedPass(
  subject: string,
  url: string,
  build: (url: string) => Promise<RoundTrip>,
  pass: CountedPass,
): Promise<BenchRow[]> {
  const target = new URL(url);
  const tap = await WireTap.start({ host: target.hostname, port: Number(target.port) }, pass.parser);
  try {
    const trip = await build(tap.through(url));
    let counted: WireCounts;
    try {
      for (let i = 0; i < 5; i++) await trip.run();
      const before = tap.snapshot();
      for (let i = 0; i < pass.ops; i++) await trip.run();
      counted = wireDelta(before, tap.snapshot());
    } finally {
      await trip.close();
    }
    const { bytesFromServer, requests } = counted;
    const requestCount = [...requests.values()].reduce((sum, n) => sum + n, 0);
    const top = [...requests]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([name, n]) => `${(n / pass.ops).toFixed(1)} ${name.replace(/bench_[a-z0-9]{6}/g, 'bench')}`) // the run's collection names, shortened
      .join(', ');
    const note = `${pass.ops} ops counted on the wire`;
    return [
      { group: pass.group, subject, metric: pass.requestsMetric, value: requestCount / pass.ops, unit: 'requests', note: top },
      { group: pass.group, subject, metric: 'bytes received per op', value: bytesFromServer / pass.ops, unit: 'bytes', note },
    ];
  } finally {
    await tap.close();
  }
}
