#!/usr/bin/env node
// Renders docs/images/bench-handoff.svg and bench-throughput.svg from the figures recorded in
// docs/performance.md, with the bench's own chart code (dist/, build first). For when no bench run of
// full size can be made: on a machine shared at a load of 30, a short run's cells count a few dozen
// grants and mostly measure the load. Each section names the run its figures come from.
// `node test-harness/scripts/render-doc-charts.mjs [outDir]` (default docs/images).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchCharts } from '../dist/bench/bench-charts.js';
import { renderBarChart } from '../dist/bench/svg-chart.js';

const FULL = 'full run 2026-11-28, idle machine';
const V3 = 'contract v3 run 2026-11-29';

/** [section, subject, p50, p99]: "End of the 2026-11-28 session" and "Contract v3" (after) in docs/performance.md. */
const HANDOFF = [
  [`redis (${FULL})`, 'holdfast redis', 1.47, 4.65],
  [`redis (${FULL})`, 'redlock 5.0.0-beta.2', 113, 264],
  [`redis (${FULL})`, 'redis-semaphore 5 Mutex', 4.89, 11.5],
  [`consul (${FULL})`, 'holdfast consul', 4.21, 11.3],
  [`consul (${FULL})`, 'holdfast consul, cross-process', 4.85, 10.5],
  [`mongodb: FerretDB 1.24, SQLite, no change streams (${FULL})`, 'holdfast mongodb', 126, 504],
  [`mongodb: FerretDB 1.24, SQLite, no change streams (${FULL})`, 'holdfast mongodb, cross-process', 138, 569],
  [`memory (${V3})`, 'holdfast memory', 0.47, 2.71],
];

/** [section, subject, contenders, grants/s] on one key, from the same two sections. */
const THROUGHPUT = [
  [`redis (${FULL})`, 'holdfast redis', 1, 949],
  [`redis (${FULL})`, 'holdfast redis', 64, 699],
  [`redis (${FULL})`, 'redis-semaphore 5 Mutex', 64, 1741],
  [`redis (${FULL})`, 'redlock 5.0.0-beta.2', 64, 1435],
  [`redis (${FULL})`, 'verrou 0.5 redis', 64, 1415],
  [`redis (${V3}, load 1.5-5.3)`, 'holdfast redis', 1, 1529],
  [`redis (${V3}, load 1.5-5.3)`, 'holdfast redis', 8, 1147],
  [`redis (${V3}, load 1.5-5.3)`, 'holdfast redis', 64, 1069],
  [`consul (${FULL})`, 'holdfast consul', 1, 328],
  [`consul (${FULL})`, 'holdfast consul', 64, 68],
  [`consul (${V3}, load 1.5-5.3)`, 'holdfast consul', 8, 69.6],
  [`consul (${V3}, load 1.5-5.3)`, 'holdfast consul', 64, 62.1],
  [`memory (${V3}, load 1.5-5.3)`, 'holdfast memory', 64, 6208],
];

const rows = [
  ...HANDOFF.flatMap(([module, subject, p50, p99]) => [
    { module, group: 'hand-off latency', subject, metric: 'p50', value: p50, unit: 'ms' },
    { module, group: 'hand-off latency', subject, metric: 'p99', value: p99, unit: 'ms' },
  ]),
  ...THROUGHPUT.map(([module, subject, n, value]) => ({
    module,
    group: `contention: ${n} contender${n === 1 ? '' : 's'} on one key`,
    subject,
    metric: 'grants/s',
    value,
    unit: 'grants/s',
  })),
];

const caption = [
  'Figures transcribed from docs/performance.md, not measured for this picture: "End of the 2026-11-28 session" (npm run bench,',
  'full sizes, 1-minute load 0.24-4.86) and the after column of "Contract v3, before and after (2026-11-29)" (load 1.5-5.3).',
  'Rendered by test-harness/scripts/render-doc-charts.mjs with the bench chart code (npm run bench -- --charts DIR draws a run).',
  'Hand-off: release() start to the waiter holding the lock, 100 rounds. Throughput: contenders on one key, each a client of its own.',
  'Log scale: each bar carries its figure. "not measured": the sections recorded no figure for that cell.',
];

const outDir = process.argv[2] ?? fileURLToPath(new URL('../../docs/images', import.meta.url));
const { handoff, throughput } = benchCharts(rows, caption);
for (const [name, chart] of [
  ['bench-handoff.svg', handoff],
  ['bench-throughput.svg', throughput],
]) {
  writeFileSync(join(outDir, name), renderBarChart(chart));
  console.log(`written: ${join(outDir, name)}`);
}
