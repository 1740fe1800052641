import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { consulBench } from './consul.js';
import { memoryBench } from './memory.js';
import { mongodbBench } from './mongodb.js';
import { redisBench } from './redis.js';
import { renderTable } from './render.js';
import type { BenchModule, BenchRow } from './types.js';

/** `npm run bench`: every backend's rows, measured side by side in one run. */
const MODULES: BenchModule[] = [memoryBench, redisBench, consulBench, mongodbBench];

const only = process.argv.slice(2);
const rows: BenchRow[] = [];
const skipped: string[] = [];
for (const module of MODULES) {
  if (only.length > 0 && !only.includes(module.name)) continue;
  process.stderr.write(`bench: ${module.name}...\n`);
  try {
    rows.push(...(await module.run()).map((row) => ({ ...row, module: module.name })));
  } catch (error) {
    skipped.push(`${module.name}: ${(error as Error).message}`);
  }
}
console.log(renderTable(rows));
for (const reason of skipped) console.log(`not measured: ${reason}`);
const dir = join(process.cwd(), 'bench-results');
mkdirSync(dir, { recursive: true });
const file = join(dir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify({ node: process.version, rows, skipped }, null, 2));
console.log(`\nwritten: ${file}`);
process.exit(skipped.length > 0 && rows.length === 0 ? 1 : 0);
