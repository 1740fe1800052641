import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type BarChart, type ChartSection, renderBarChart } from './svg-chart.js';
import type { BenchRow } from './types.js';

const HANDOFF_GROUP = 'hand-off latency';
const CONTENTION_GROUP = /^contention: (\d+) contenders? on one key$/;

/** The two pictures docs/performance.md shows, as chart descriptions (rendered by renderBarChart). */
export function benchCharts(rows: readonly BenchRow[], caption: readonly string[]): { handoff: BarChart; throughput: BarChart } {
  return { handoff: handoffChart(rows, caption), throughput: throughputChart(rows, caption) };
}

/** Hand-off latency, release() start to the waiter holding the lock: p50 and p99 per backend and library. */
export function handoffChart(rows: readonly BenchRow[], caption: readonly string[]): BarChart {
  const sections = modulesOf(rows).map((module): ChartSection => {
    const ofGroup = rows.filter((row) => (row.module ?? '') === module && row.group === HANDOFF_GROUP);
    const bars = unique(ofGroup.map((row) => row.subject)).map((subject) => ({
      label: subject,
      values: ['p50', 'p99'].map((metric) => ofGroup.find((row) => row.subject === subject && row.metric === metric)?.value),
    }));
    return { label: module, bars };
  });
  return {
    title: 'Hand-off latency: release() to the next waiter holding the lock',
    caption,
    unit: 'ms',
    scale: 'log',
    series: ['p50', 'p99'],
    sections: sections.filter((section) => section.bars.length > 0),
  };
}

/** Grants per second on one key as contenders grow, per backend and library. */
export function throughputChart(rows: readonly BenchRow[], caption: readonly string[]): BarChart {
  const cells = rows.flatMap((row) => {
    const contenders = CONTENTION_GROUP.exec(row.group)?.[1];
    return contenders !== undefined && row.metric === 'grants/s' ? [{ row, contenders: Number(contenders) }] : [];
  });
  const counts = unique(cells.map((cell) => cell.contenders)).sort((a, b) => a - b);
  const sections = modulesOf(cells.map((cell) => cell.row)).map((module): ChartSection => {
    const ofModule = cells.filter((cell) => (cell.row.module ?? '') === module);
    const bars = unique(ofModule.map((cell) => cell.row.subject)).map((subject) => ({
      label: subject,
      values: counts.map((n) => ofModule.find((cell) => cell.row.subject === subject && cell.contenders === n)?.row.value),
    }));
    return { label: module, bars };
  });
  return {
    title: 'Throughput on one key as contenders grow',
    caption,
    unit: 'grants/s',
    scale: 'log',
    series: counts.map((n) => `${n} contender${n === 1 ? '' : 's'}`),
    sections,
  };
}

/** Writes bench-handoff.svg and bench-throughput.svg into `dir`; returns their paths. */
export function writeBenchCharts(dir: string, rows: readonly BenchRow[], caption: readonly string[]): string[] {
  mkdirSync(dir, { recursive: true });
  const { handoff, throughput } = benchCharts(rows, caption);
  const files: string[] = [];
  for (const [name, chart] of [
    ['bench-handoff.svg', handoff],
    ['bench-throughput.svg', throughput],
  ] as const) {
    if (chart.sections.length === 0) continue;
    const file = join(dir, name);
    writeFileSync(file, renderBarChart(chart));
    files.push(file);
  }
  return files;
}

function modulesOf(rows: readonly BenchRow[]): string[] {
  return unique(rows.map((row) => row.module ?? ''));
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
