import type { BenchRow } from './types.js';

/**
 * Groups rows; within a group and metric, each row shows its ratio to the first row its module
 * measured there (a raw client round trip or a peer library on the same server, in the same run).
 */
export function renderTable(rows: BenchRow[]): string {
  const lines: string[] = [];
  const subjectWidth = Math.max(...rows.map((row) => row.subject.length));
  const metricWidth = Math.max(...rows.map((row) => row.metric.length));
  const groups = [...new Set(rows.map((row) => row.group))];
  for (const group of groups) {
    lines.push(`\n${group}`);
    const inGroup = rows.filter((row) => row.group === group);
    for (const metric of [...new Set(inGroup.map((row) => row.metric))]) {
      const metricRows = inGroup.filter((row) => row.metric === metric);
      for (const row of metricRows) {
        const base = metricRows.find((other) => other.module === row.module)!;
        const ratio = row === base || base.value === 0 ? '' : `  x${(row.value / base.value).toFixed(2)} vs ${base.subject}`;
        const note = row.note ? `  (${row.note})` : '';
        lines.push(`  ${metric.padEnd(metricWidth)} ${row.subject.padEnd(subjectWidth)} ${format(row.value).padStart(10)} ${row.unit}${ratio}${note}`);
      }
    }
  }
  return lines.join('\n');
}

function format(value: number): string {
  if (Number.isNaN(value)) return '-';
  if (Math.abs(value) >= 100) return Math.round(value).toString();
  return value.toFixed(2);
}
