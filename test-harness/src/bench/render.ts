import type { BenchRow } from './types.js';

/** Groups rows and shows, per group and metric, each subject's ratio to the group's first subject. */
export function renderTable(rows: BenchRow[]): string {
  const lines: string[] = [];
  const groups = [...new Set(rows.map((row) => row.group))];
  for (const group of groups) {
    lines.push(`\n${group}`);
    const inGroup = rows.filter((row) => row.group === group);
    for (const metric of [...new Set(inGroup.map((row) => row.metric))]) {
      const metricRows = inGroup.filter((row) => row.metric === metric);
      const base = metricRows[0]!;
      for (const row of metricRows) {
        const ratio = row === base || base.value === 0 ? '' : `  x${(row.value / base.value).toFixed(2)} vs ${base.subject}`;
        const note = row.note ? `  (${row.note})` : '';
        lines.push(`  ${metric.padEnd(22)} ${row.subject.padEnd(34)} ${format(row.value).padStart(10)} ${row.unit}${ratio}${note}`);
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
