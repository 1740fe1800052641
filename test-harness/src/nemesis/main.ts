/**
 * The nemesis: `npm run nemesis -- <backend> [scenario ...] [--out dir]`. Runs each scenario of the
 * backend (or those named) in a fresh network of namespaces, writes one JSON report per run into
 * `--out` (default nemesis-reports/), prints the table, and exits 1 if any run broke a guarantee.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { NEMESIS_BACKENDS } from './backends.js';
import { renderTable } from './render.js';
import { type NemesisReport, runScenario } from './run.js';

const args = process.argv.slice(2);
const outAt = args.indexOf('--out');
const out = resolve(outAt >= 0 ? args.splice(outAt, 2)[1]! : 'nemesis-reports');
const [backend, ...names] = args;
const entry = backend ? NEMESIS_BACKENDS[backend] : undefined;
if (!entry) {
  process.stderr.write(`usage: npm run nemesis -- <${Object.keys(NEMESIS_BACKENDS).join('|')}> [scenario ...] [--out dir]\n`);
  process.exit(2);
}
const unknown = names.filter((name) => !entry.scenarios.some((scenario) => scenario.name === name));
if (unknown.length > 0) {
  process.stderr.write(`unknown scenario(s) ${unknown.join(', ')}; ${backend} has ${entry.scenarios.map((s) => s.name).join(', ')}\n`);
  process.exit(2);
}
const chosen = names.length > 0 ? entry.scenarios.filter((scenario) => names.includes(scenario.name)) : entry.scenarios;
// Ended by a signal, the exit handlers still remove the namespaces (and the processes in them).
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

mkdirSync(out, { recursive: true });
const reports: NemesisReport[] = [];
for (const scenario of chosen) {
  const file = join(out, `${backend}-${scenario.name}.json`);
  const report = await runScenario(entry.target, scenario, { historyFile: file.replace(/\.json$/, '.history.jsonl') });
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  process.stderr.write(`[nemesis] ${backend}/${scenario.name}: ${report.ok ? 'ok' : 'VIOLATION'} (${file})\n`);
  reports.push(report);
}
process.stdout.write(`${renderTable(reports)}\n`);
process.exit(reports.every((report) => report.ok) ? 0 : 1);
