import type { BenchRow } from './types.js';

/**
 * One table per module and group: a line per subject, a column per metric, then the first metric's
 * ratio to the group's first subject (a raw round trip, a peer, or Holdfast itself; always the same
 * module, so the same server in the same run), then the notes.
 */
export function renderTable(rows: readonly BenchRow[], servers: ReadonlyMap<string, string> = new Map()): string {
  const out: string[] = [];
  for (const module of unique(rows.map((row) => row.module ?? ''))) {
    const ofModule = rows.filter((row) => (row.module ?? '') === module);
    out.push('', `=== ${module || 'bench'}${servers.get(module) ? `: ${servers.get(module)}` : ''}`);
    for (const group of unique(ofModule.map((row) => row.group)))
      out.push(
        '',
        ...renderGroup(
          group,
          ofModule.filter((row) => row.group === group),
        ),
      );
  }
  return out.join('\n');
}

function renderGroup(group: string, rows: readonly BenchRow[]): string[] {
  const metrics = unique(rows.map((row) => row.metric));
  const subjects = unique(rows.map((row) => row.subject));
  const cell = (subject: string, metric: string): BenchRow | undefined =>
    rows.find((row) => row.subject === subject && row.metric === metric);
  const first = metrics[0]!;
  const base = cell(subjects[0]!, first);
  const unitOf = (metric: string): string => rows.find((row) => row.metric === metric)!.unit;
  const heading = (metric: string): string => (metric.includes(unitOf(metric)) ? metric : `${metric} (${unitOf(metric)})`);
  const header = ['', ...metrics.map(heading), subjects.length > 1 ? `vs ${subjects[0]}` : ''];
  const lines = subjects.map((subject) => {
    const own = cell(subject, first);
    const ratio = subject === subjects[0] || !own || !base || !(base.value > 0) ? '' : `x${ratioText(own.value / base.value)}`;
    const notes = unique(rows.filter((row) => row.subject === subject && row.note).map((row) => row.note!));
    return [subject, ...metrics.map((metric) => formatValue(cell(subject, metric)?.value)), ratio, notes.join('; ')];
  });
  return [group, ...align([header, ...lines])];
}

function align(table: string[][]): string[] {
  const widths = table[0]!.map((_, column) => Math.max(...table.map((line) => line[column]?.length ?? 0)));
  const pad = (text: string, column: number, last: boolean): string =>
    last ? text : column === 0 ? text.padEnd(widths[column]!) : text.padStart(widths[column]!);
  return table.map((line) => `  ${line.map((text, column) => pad(text, column, column === line.length - 1)).join('  ')}`.trimEnd());
}

function ratioText(ratio: number): string {
  return ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(2);
}

/** A figure as the tables show it: whole numbers from 100 up, else two decimals; "-" when not measured. */
export function formatValue(value: number | undefined): string {
  if (value === undefined || Number.isNaN(value)) return '-';
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toFixed(2);
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
