import { describeMachine } from './machine.js';
import type { BenchResult } from './run.js';

/** The lines under a chart: when, with which sizes, on what machine and servers, so a picture is never read without its conditions. */
export function chartCaption(result: BenchResult): string[] {
  const { settings } = result;
  const sizes = `${settings.rounds} hand-off rounds per library, ${settings.contentionMs} ms per contention cell${settings.quick ? ' (--quick)' : ''}`;
  return [
    `npm run bench, ${result.startedAt.slice(0, 10)}: ${sizes}; ${result.seconds.toFixed(0)} s.`,
    `machine: ${describeMachine(result.machine)}`,
    ...Object.entries(result.servers).map(([module, server]) => `${module}: ${server}`),
    'Log scale; each bar is labelled with its figure. Ratios compare libraries of one backend (same server, same run).',
  ];
}
