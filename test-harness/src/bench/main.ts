import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeBenchCharts } from './bench-charts.js';
import { chartCaption } from './chart-caption.js';
import { renderGoals } from './goals.js';
import { describeMachine } from './machine.js';
import { evaluateRedisGoals } from './redis-goals.js';
import { renderTable } from './render.js';
import { runBench } from './run.js';
import { BenchUsageError, parseBenchArgs, USAGE } from './settings.js';

/** `npm run bench [-- --quick] [modules]`: every backend's rows, measured side by side in one run (see docs/performance.md). */
const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
const settings = (() => {
  try {
    return parseBenchArgs(args);
  } catch (error) {
    if (!(error instanceof BenchUsageError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
})();
const result = await runBench(settings, (line) => process.stderr.write(`bench: ${line}\n`));
console.log(renderTable(result.rows, new Map(Object.entries(result.servers))));
console.log(`\n${renderGoals(result.goals)}`);
if (result.rows.some((row) => row.module === 'redis'))
  console.log(
    `\n${renderGoals(evaluateRedisGoals(result.rows), 'issue 23 table, Redis (this run; each goal met, or by how much it is not):')}`,
  );
for (const reason of result.skipped) console.log(`not measured: ${reason}`);
console.log(`\nmachine: ${describeMachine(result.machine)}; ${result.seconds.toFixed(0)} s${settings.quick ? ', --quick' : ''}`);
mkdirSync(settings.outDir, { recursive: true });
const file = join(settings.outDir, `bench-${result.startedAt.replace(/[:.]/g, '-')}.json`);
writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
console.log(`written: ${file}`);
if (settings.chartsDir)
  for (const chart of writeBenchCharts(settings.chartsDir, result.rows, chartCaption(result))) console.log(`written: ${chart}`);
process.exit(result.rows.length === 0 ? 1 : 0);
