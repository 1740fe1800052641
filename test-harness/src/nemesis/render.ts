/**
 * Renders nemesis reports as a markdown table: `node test-harness/dist/nemesis/render.js <report.json ...>`
 * (or every JSON file of a directory).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NemesisReport } from './run.js';

const COLUMNS: [string, (r: NemesisReport) => string | number][] = [
  ['backend', (r) => r.backend],
  ['scenario', (r) => r.scenario],
  ['s', (r) => r.seconds],
  ['grants', (r) => r.grants],
  ['faults', (r) => r.faults.length],
  ['double grants', (r) => (r.doubleGrants > 0 && r.doubleGrantsAllowed ? `${r.doubleGrants} (allowed)` : r.doubleGrants)],
  ['longest overlap ms', (r) => r.longestOverlapMs],
  ['stale writes accepted', (r) => r.staleWritesAccepted],
  ['stale writes rejected', (r) => r.staleWritesRejected],
  [
    'token regressions',
    (r) => (r.tokenRegressions > 0 && r.tokenRegressionsAllowed ? `${r.tokenRegressions} (allowed)` : r.tokenRegressions),
  ],
  ['losses told', (r) => r.lossesReported],
  ['losses untold', (r) => r.lossesUntold],
  ['hung calls', (r) => r.hungCalls],
  ['recovery ms (each heal)', (r) => r.recoveryMs.map((ms) => (ms === null ? 'none' : ms)).join(', ') || '-'],
  ['ok', (r) => (r.ok ? 'yes' : 'NO')],
];

export function renderTable(reports: readonly NemesisReport[]): string {
  const head = `| ${COLUMNS.map(([name]) => name).join(' | ')} |`;
  const rule = `| ${COLUMNS.map(() => '---').join(' | ')} |`;
  const rows = reports.map((report) => `| ${COLUMNS.map(([, cell]) => String(cell(report))).join(' | ')} |`);
  return [head, rule, ...rows].join('\n');
}

function reportFiles(paths: readonly string[]): string[] {
  return paths.flatMap((path) =>
    statSync(path).isDirectory()
      ? readdirSync(path)
          .filter((name) => name.endsWith('.json'))
          .sort()
          .map((name) => join(path, name))
      : [path],
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const files = reportFiles(process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['nemesis-reports']);
  process.stdout.write(`${renderTable(files.map((file) => JSON.parse(readFileSync(file, 'utf8')) as NemesisReport))}\n`);
}
