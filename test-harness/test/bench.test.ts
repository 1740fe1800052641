import { describe, expect, test } from 'vitest';
import { evaluateGoals } from '../src/bench/goals.js';
import { evaluateRedisGoals } from '../src/bench/redis-goals.js';
import { renderTable } from '../src/bench/render.js';
import { MODULES, runBench } from '../src/bench/run.js';
import { BenchUsageError, parseBenchArgs } from '../src/bench/settings.js';
import type { BenchRow } from '../src/bench/types.js';
import { percentile } from '../src/percentile.js';

/** The bench must not rot: its quick mode runs end to end on the memory backend, and its arithmetic holds. */
describe('the bench', () => {
  test('percentile is nearest rank: with 100 samples p99 is the 99th value, not the maximum', () => {
    const samples = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(samples, 50)).toBe(50);
    expect(percentile(samples, 99)).toBe(99);
    expect(percentile(samples, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });

  test('settings: flags win over HOLDFAST_BENCH_* variables, which win over the defaults; bad values are refused', () => {
    const env = { HOLDFAST_BENCH_ROUNDS: '150', HOLDFAST_BENCH_HOLD: '20' };
    const settings = parseBenchArgs(['redis', '--hold', '30', '--contenders', '1,4'], env, '/x');
    expect(settings).toMatchObject({
      only: ['redis'],
      rounds: 150,
      hold: 30,
      contenders: [1, 4],
      quick: false,
      outDir: '/x/bench-results',
    });
    expect(parseBenchArgs(['--quick'], {}).rounds).toBeLessThan(parseBenchArgs([], {}).rounds);
    expect(parseBenchArgs([], {}).rounds).toBeGreaterThanOrEqual(100);
    expect(() => parseBenchArgs(['--rounds', '0'], {})).toThrow(/--rounds must be a positive integer/);
    expect(() => parseBenchArgs(['--nope', '1'], {})).toThrow(/unknown flag --nope/);
    expect(() => parseBenchArgs(['sqlite'], {})).toThrow(/unknown argument "sqlite"/);
    // A usage error (main prints it and exits 2, no stack), as is a flag with no value.
    expect(() => parseBenchArgs(['--rounds'], {})).toThrow(BenchUsageError);
    expect(() => parseBenchArgs(['--rounds', '0'], {})).toThrow(BenchUsageError);
    // The default run is the four backends; the SQL ones run when named.
    expect(MODULES.filter((module) => !module.optional).map((module) => module.name)).toEqual(['memory', 'redis', 'consul', 'mongodb']);
    expect(parseBenchArgs(['postgres', 'mysql'], {}).only).toEqual(['postgres', 'mysql']);
  });

  test('the table shows each subject against the first of its group, per module', () => {
    const row = (subject: string, value: number, module = 'redis'): BenchRow => ({
      group: 'uncontended acquire+release',
      subject,
      metric: 'ops/s',
      value,
      unit: 'ops/s',
      module,
    });
    const text = renderTable([row('raw', 2000), row('holdfast redis', 1500), row('holdfast memory', 9000, 'memory')]);
    expect(text).toMatch(/=== redis[\s\S]*holdfast redis\s+1,500\s+x0\.75/);
    expect(text).toMatch(/=== memory[\s\S]*holdfast memory\s+9,000/);
    expect(text).not.toMatch(/holdfast memory\s+9,000\s+x/);
  });

  test('the issue table: a goal is met or not from the figures, and missing figures say so', () => {
    const contention = (n: number, subject: string, value: number): BenchRow => ({
      module: 'redis',
      group: `contention: ${n} contender${n === 1 ? '' : 's'} on one key`,
      subject,
      metric: 'grants/s',
      value,
      unit: 'grants/s',
    });
    const goals = evaluateGoals([contention(1, 'holdfast redis', 1000), contention(8, 'holdfast redis', 800), contention(8, 'peer', 700)]);
    expect(goals.find((goal) => goal.measurement.startsWith('Redis, 8 contenders'))).toMatchObject({ verdict: 'met', best: 'peer 700' });
    const worse = evaluateGoals([contention(1, 'holdfast redis', 1000), contention(8, 'holdfast redis', 600), contention(8, 'peer', 700)]);
    expect(worse.find((goal) => goal.measurement.startsWith('Redis, 8 contenders'))!.verdict).toBe('not met');
    expect(goals.find((goal) => goal.measurement.startsWith('MongoDB hand-off'))!.verdict).toBe('not measured');
  });

  test("issue 23's Redis table: each goal against the same cell's peers, and by how much it is missed", () => {
    const row = (group: string, subject: string, metric: string, value: number): BenchRow => ({
      module: 'redis',
      group,
      subject,
      metric,
      value,
      unit: '',
    });
    const one = 'contention: 64 contenders on one key';
    const rows = [
      row('uncontended acquire+release', 'raw ioredis (SET NX PX + EVAL del)', 'ops/s', 1000),
      row('uncontended acquire+release', 'holdfast redis', 'ops/s', 800),
      row('uncontended acquire+release', 'peer', 'ops/s', 1000),
      row('contention: 8 contenders on 1000 keys', 'holdfast redis', 'grants/s', 500),
      row('contention: 8 contenders on 1000 keys', 'peer', 'grants/s', 400),
      row('contention: 1 contender on one key', 'holdfast redis', 'grants/s', 1000),
      row(one, 'holdfast redis', 'grants/s', 800),
      row(one, 'holdfast redis barging', 'grants/s', 900),
      row(one, 'peer', 'grants/s', 1000),
      row(one, 'holdfast redis', 'wait p99', 10),
      row(one, 'peer', 'wait p99', 60),
      row(one, 'other peer', 'wait p99', 40),
    ];
    const goals = evaluateRedisGoals(rows);
    const find = (start: string) => goals.find((goal) => goal.measurement.startsWith(start))!;
    expect(find('Redis uncontended')).toMatchObject({ verdict: 'not met', best: 'peer 1.00x' });
    expect(find('Redis uncontended').holdfast).toContain("0.80x of the best peer's ratio");
    expect(find('Redis, 8 contenders on 1000 keys')).toMatchObject({ verdict: 'met', best: 'peer 400' });
    // 80 % of one contender's rate, but 4x better than one peer's p99 only: not met, and the line says against whom.
    expect(find('Redis, 64 contenders on one key, FIFO')).toMatchObject({ verdict: 'not met' });
    expect(find('Redis, 64 contenders on one key, FIFO').best).toContain('other peer p99 40.00 ms (ours 4.00x better');
    expect(find('Redis, 64 contenders on one key, barging').holdfast).toContain('0.90x of the best peer');
    expect(find('Redis quorum').verdict).toBe('not measured');
  });

  test('quick mode runs every memory row end to end, with figures that make sense', async () => {
    const settings = parseBenchArgs(
      [
        'memory',
        '--quick',
        '--rounds',
        '3',
        '--throughput-ms',
        '100',
        '--slice-ms',
        '25',
        '--contention-ms',
        '100',
        '--contenders',
        '1,4',
        '--keys',
        '10',
        '--hold',
        '100',
      ],
      {},
    );
    const result = await runBench(settings);
    expect(result.skipped).toEqual([]);
    const value = (group: string, subject: string, metric: string): number | undefined =>
      result.rows.find((row) => row.group === group && row.subject === subject && row.metric === metric)?.value;
    for (const subject of ['holdfast memory', 'verrou 0.5 memory']) {
      expect(value('uncontended acquire+release', subject, 'ops/s')).toBeGreaterThan(0);
      expect(value('hand-off latency', subject, 'p50')).toBeGreaterThanOrEqual(0);
      expect(value('hand-off latency', subject, 'p99')).toBeGreaterThanOrEqual(value('hand-off latency', subject, 'p50')!);
      for (const group of [
        'contention: 1 contender on one key',
        'contention: 4 contenders on one key',
        'contention: 4 contenders on 10 keys',
      ]) {
        expect(value(group, subject, 'grants/s'), `${subject}: ${group}`).toBeGreaterThan(0);
        expect(value(group, subject, 'busiest share')).toBeGreaterThanOrEqual(group.startsWith('contention: 1 ') ? 100 : 25);
      }
    }
    // Holdfast memory never grants a key twice: the contention loop would have noted it.
    expect(result.rows.filter((row) => row.subject === 'holdfast memory' && /another contender held/.test(row.note ?? ''))).toEqual([]);
    expect(value('hold 100 locks', 'holdfast memory', 'locks taken')).toBe(100);
    expect(result.goals.find((goal) => goal.measurement.startsWith('memory'))!.verdict).not.toBe('not measured');
    expect(result.machine.cores).toBeGreaterThan(0);
  }, 60_000);
});
