import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { benchCharts, writeBenchCharts } from '../src/bench/bench-charts.js';
import { parseBenchArgs } from '../src/bench/settings.js';
import { renderBarChart } from '../src/bench/svg-chart.js';
import type { BenchRow } from '../src/bench/types.js';

/** Fixed figures in the shape the bench writes them (two modules, peers, two contender counts). */
const ROWS: BenchRow[] = [
  { module: 'redis', group: 'hand-off latency', subject: 'holdfast redis', metric: 'p50', value: 1.47, unit: 'ms' },
  { module: 'redis', group: 'hand-off latency', subject: 'holdfast redis', metric: 'p99', value: 4.65, unit: 'ms' },
  { module: 'redis', group: 'hand-off latency', subject: 'redlock <5>', metric: 'p50', value: 113, unit: 'ms' },
  { module: 'redis', group: 'hand-off latency', subject: 'redlock <5>', metric: 'p99', value: 264, unit: 'ms' },
  { module: 'memory', group: 'hand-off latency', subject: 'holdfast memory', metric: 'p50', value: 0.32, unit: 'ms' },
  {
    module: 'redis',
    group: 'contention: 1 contender on one key',
    subject: 'holdfast redis',
    metric: 'grants/s',
    value: 2100,
    unit: 'grants/s',
  },
  {
    module: 'redis',
    group: 'contention: 8 contenders on one key',
    subject: 'holdfast redis',
    metric: 'grants/s',
    value: 1500,
    unit: 'grants/s',
  },
  { module: 'redis', group: 'contention: 8 contenders on one key', subject: 'holdfast redis', metric: 'wait p50', value: 4, unit: 'ms' },
  {
    module: 'redis',
    group: 'contention: 8 contenders on 1000 keys',
    subject: 'holdfast redis',
    metric: 'grants/s',
    value: 9000,
    unit: 'grants/s',
  },
  {
    module: 'redis',
    group: 'contention: 1 contender on one key',
    subject: 'redlock <5>',
    metric: 'grants/s',
    value: 1800,
    unit: 'grants/s',
  },
  {
    module: 'postgres',
    group: 'contention: 8 contenders on one key',
    subject: 'holdfast postgres',
    metric: 'grants/s',
    value: 0,
    unit: 'grants/s',
  },
];

test('the hand-off chart is well-formed SVG with a p50 and a p99 bar per library, labelled with its figure, names escaped', () => {
  const svg = renderBarChart(benchCharts(ROWS, ['fixed figures & a caption']).handoff);
  expectWellFormed(svg);
  expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>\n<title>Hand-off latency: /);
  const bars = [...svg.matchAll(/<rect class="bar"[^>]*><title>([^<]*)<\/title>/g)].map((match) => match[1]);
  expect(bars).toEqual([
    'holdfast redis, p50: 1.47 ms',
    'holdfast redis, p99: 4.65 ms',
    'redlock &lt;5&gt;, p50: 113 ms',
    'redlock &lt;5&gt;, p99: 264 ms',
    'holdfast memory, p50: 0.32 ms',
  ]);
  // memory measured no p99 here: said so, not drawn as zero.
  expect(svg).toContain('>not measured</text>');
  expect(svg).toContain('>fixed figures &amp; a caption</text>');
  // Log scale: 113 ms is drawn longer than 1.47 ms, and 264 longer than 113.
  const widths = [...svg.matchAll(/<rect class="bar"[^>]*width="([\d.]+)"/g)].map((match) => Number(match[1]));
  expect(widths[2]).toBeGreaterThan(widths[0]!);
  expect(widths[3]).toBeGreaterThan(widths[2]!);
});

test('the throughput chart has one series per contender count, from the one-key cells only', () => {
  const chart = benchCharts(ROWS, ['caption']).throughput;
  expect(chart.series).toEqual(['1 contender', '8 contenders']);
  expect(chart.sections).toEqual([
    {
      label: 'redis',
      bars: [
        { label: 'holdfast redis', values: [2100, 1500] },
        { label: 'redlock <5>', values: [1800, undefined] },
      ],
    },
    { label: 'postgres', bars: [{ label: 'holdfast postgres', values: [undefined, 0] }] },
  ]);
  const svg = renderBarChart(chart);
  expectWellFormed(svg);
  expect(svg).toContain('>2,100</text>');
  expect(svg).toContain('>1,500</text>');
  expect(svg).toContain('>8 contenders</text>');
  // A cell that granted nothing says 0; a cell never run says so.
  expect(svg.match(/>0<\/text>/g)).toHaveLength(1);
  expect(svg.match(/>not measured<\/text>/g)).toHaveLength(2);
});

test('--charts DIR (or HOLDFAST_BENCH_CHARTS) writes both files there', () => {
  expect(parseBenchArgs(['--charts', '/tmp/c'], {}).chartsDir).toBe('/tmp/c');
  expect(parseBenchArgs([], { HOLDFAST_BENCH_CHARTS: '/tmp/e' }).chartsDir).toBe('/tmp/e');
  expect(parseBenchArgs([], {}).chartsDir).toBeUndefined();
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-charts-'));
  try {
    const files = writeBenchCharts(dir, ROWS, ['caption']);
    expect(files).toEqual([join(dir, 'bench-handoff.svg'), join(dir, 'bench-throughput.svg')]);
    for (const file of files) expectWellFormed(readFileSync(file, 'utf8'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * XML well-formedness, enough for what renderBarChart writes: one root element, every tag closed in
 * order, attributes quoted, no bare `<` or `&` in text. (No XML parser is a dependency of this project.)
 */
function expectWellFormed(svg: string): void {
  const open: string[] = [];
  let roots = 0;
  const token = /<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<&]*(?:&(?:amp|lt|gt|quot);[^"<&]*)*")*)\s*(\/?)>|([^<]+)/gy;
  let at = 0;
  for (let match = token.exec(svg); match !== null; match = token.exec(svg)) {
    at = token.lastIndex;
    const [, closing, name, , selfClosing, text] = match;
    if (text !== undefined) {
      if (open.length === 0) expect(text.trim(), 'text outside the root element').toBe('');
      expect(text.replace(/&(amp|lt|gt|quot);/g, ''), 'text without bare & or >').not.toMatch(/[&>]/);
      continue;
    }
    if (closing) expect(open.pop(), `closing </${name}>`).toBe(name);
    else if (!selfClosing) {
      if (open.length === 0) roots++;
      open.push(name!);
    } else if (open.length === 0) roots++;
  }
  expect(at, `everything after offset ${at} is a tag or text`).toBe(svg.length);
  expect(open).toEqual([]);
  expect(roots).toBe(1);
}
