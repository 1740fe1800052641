import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderGoals } from './goals.js';
import { describeMachine } from './machine.js';
import { renderTable } from './render.js';
import { runBench } from './run.js';
import { parseBenchArgs } from './settings.js';

/** `npm run bench [-- --quick] [modules]`: every backend's rows, measured side by side in one run (see docs/performance.md). */
const settings = parseBenchArgs(process.argv.slice(2));
const result = await runBench(settings, (line) => process.stderr.write(`bench: ${line}\n`));
console.log(renderTable(result.rows, new Map(Object.entries(result.servers))));
console.log(`\n${renderGoals(result.goals)}`);
for (const reason of result.skipped) console.log(`not measured: ${reason}`);
console.log(`\nmachine: ${describeMachine(result.machine)}; ${result.seconds.toFixed(0)} s${settings.quick ? ', --quick' : ''}`);
mkdirSync(settings.outDir, { recursive: true });
const file = join(settings.outDir, `bench-${result.startedAt.replace(/[:.]/g, '-')}.json`);
writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
console.log(`written: ${file}`);
process.exit(result.rows.length === 0 ? 1 : 0);
