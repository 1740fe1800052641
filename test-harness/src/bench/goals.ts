import { formatValue } from './render.js';
import type { BenchRow } from './types.js';

/** One line of issue 15's table: this run's figures beside the goal, and whether it is met. */
export interface Goal {
  readonly measurement: string;
  readonly holdfast: string;
  readonly best: string;
  readonly goal: string;
  readonly verdict: 'met' | 'not met' | 'not measured';
}

/** The rows of one module's group and metric, in the order measured. */
type Rows = (module: string, group: string, metric: string) => BenchRow[];

export const RAW = {
  redis: 'raw ioredis (SET NX PX + EVAL del)',
  mongodb: 'raw driver (grab + unlock findAndModify)',
} as const;

/** Evaluates issue 15's table on a run's rows; a line whose figures are missing says so. */
export function evaluateGoals(measured: readonly BenchRow[]): Goal[] {
  const rows: Rows = (module, group, metric) =>
    measured.filter((row) => row.module === module && row.group === group && row.metric === metric);
  return [
    contended(rows, 'redis', 'holdfast redis', true),
    commandsPerGrant(rows),
    contended(rows, 'consul', 'holdfast consul', false),
    consulPrefix(measured),
    redisUncontended(rows),
    ratioGoal(
      rows('redis', 'quorum of 3: uncontended acquire+release', 'ops/s'),
      'Redis quorum of 3, acquire+release/s',
      'holdfast redis quorum',
      1,
      '>= redlock',
    ),
    ratioGoal(
      rows('memory', 'uncontended acquire+release', 'ops/s'),
      'memory, acquire+release/s',
      'holdfast memory',
      1.5,
      '>= 1.5x verrou memory',
    ),
    mongoUncontended(rows),
    mongoHandoff(rows),
    mongoHold(measured),
  ];
}

const text = (row: BenchRow | undefined): string => formatValue(row?.value);
const of = (list: BenchRow[], subject: string): BenchRow | undefined => list.find((row) => row.subject === subject);
const missing = (measurement: string, goal: string): Goal => ({ measurement, holdfast: '-', best: '-', goal, verdict: 'not measured' });
const verdict = (ok: boolean): Goal['verdict'] => (ok ? 'met' : 'not met');
const contentionGroup = (n: number): string => `contention: ${n} contender${n === 1 ? '' : 's'} on one key`;

/** The contender counts measured on one key, fewest first (1, 8, 64 in a full run). */
function contenderCounts(rows: Rows, module: string): number[] {
  const counts: number[] = [];
  for (let n = 1; n <= 1024; n++) if (rows(module, contentionGroup(n), 'grants/s').length > 0) counts.push(n);
  return counts;
}

function contended(rows: Rows, module: string, subject: string, withPeers: boolean): Goal {
  const n = contenderCounts(rows, module).at(-1) ?? 64;
  const name = `${module === 'redis' ? 'Redis' : 'Consul'}, ${n} contenders on one key, grants/s`;
  const goal = withPeers ? '>= 70 % of the 1-contender rate, and >= the best peer' : '>= 70 % of the 1-contender rate';
  const cell = rows(module, contentionGroup(n), 'grants/s');
  const many = of(cell, subject);
  const one = of(rows(module, contentionGroup(1), 'grants/s'), subject);
  if (n === 1 || !many || !one) return missing(name, goal);
  const best = cell.filter((row) => row !== many).sort((a, b) => b.value - a.value)[0];
  const p50 = of(rows(module, contentionGroup(n), 'wait p50'), subject);
  return {
    measurement: name,
    holdfast: `${text(many)} (${text(one)} with 1 contender: x${(many.value / one.value).toFixed(2)}), wait p50 ${text(p50)} ms`,
    best: best ? `${best.subject} ${text(best)}` : '-',
    goal,
    verdict: verdict(many.value >= 0.7 * one.value && (!withPeers || !best || many.value >= best.value)),
  };
}

/** O(1) read as: the per-grant count at the most contenders is within 1.25x of the count at the fewest waiters. */
function commandsPerGrant(rows: Rows): Goal {
  const counts = contenderCounts(rows, 'redis');
  const most = counts.at(-1) ?? 64;
  const fewest = counts.find((n) => n > 1 && n < most) ?? 1;
  const name = `Redis commands per grant, ${most} contenders`;
  const goal = `O(1) per grant, independent of the number of waiters (read: <= 1.25x the figure at ${fewest})`;
  const at = (n: number): BenchRow | undefined => of(rows('redis', contentionGroup(n), 'commands per grant'), 'holdfast redis');
  const [many, few] = [at(most), at(fewest)];
  if (!many || !few || most === fewest) return missing(name, goal);
  return {
    measurement: name,
    holdfast: `${text(many)} (${many.note ?? ''}); ${text(few)} at ${fewest}`,
    best: `2 uncontended (${RAW.redis})`,
    goal,
    verdict: verdict(many.value <= 1.25 * few.value),
  };
}

function consulPrefix(measured: readonly BenchRow[]): Goal {
  const name = 'Consul, another provider holds many locks in the same prefix';
  const goal = 'cost per op independent of what others hold; an idle holder near 0 % CPU (read: >= 0.8x ops/s, <= 1.25x bytes, < 5 %)';
  const group = measured.find((row) => row.module === 'consul' && row.group.startsWith('another provider holds'))?.group;
  const find = (subject: RegExp, metric: string): BenchRow | undefined =>
    measured.find((row) => row.module === 'consul' && row.group === group && subject.test(row.subject) && row.metric === metric);
  const [opsEmpty, opsFull] = [find(/empty prefix/, 'ops/s'), find(/held/, 'ops/s')];
  const [bytesEmpty, bytesFull] = [find(/empty prefix/, 'bytes received per op'), find(/held/, 'bytes received per op')];
  const [cpu, holderBytes] = [find(/holder/, 'CPU'), find(/holder/, 'bytes received per op')];
  if (!group || !opsEmpty || !opsFull || !bytesEmpty || !bytesFull || !cpu) return missing(name, goal);
  return {
    measurement: `Consul, ${group} (same prefix)`,
    holdfast:
      `${text(opsFull)} ops/s (${text(opsEmpty)} with an empty prefix), ${text(bytesFull)} bytes received per op (${text(bytesEmpty)}); ` +
      `the idle holder ${text(cpu)} % of a core, ${text(holderBytes)} bytes received per op`,
    best: '-',
    goal,
    verdict: verdict(opsFull.value >= 0.8 * opsEmpty.value && bytesFull.value <= 1.25 * bytesEmpty.value && cpu.value < 5),
  };
}

function redisUncontended(rows: Rows): Goal {
  const name = 'Redis uncontended acquire+release, ratio to raw SET NX PX + compare-delete';
  const list = rows('redis', 'uncontended acquire+release', 'ops/s');
  const [raw, holdfast] = [of(list, RAW.redis), of(list, 'holdfast redis')];
  if (!raw || !holdfast) return missing(name, '>= 0.9x');
  const ratio = (row: BenchRow): string => `${(row.value / raw.value).toFixed(2)}x`;
  const peers = list.filter((row) => row !== raw && row !== holdfast);
  return {
    measurement: name,
    holdfast: `${ratio(holdfast)} (${text(holdfast)} vs ${text(raw)} ops/s)`,
    best: peers.map((row) => `${row.subject} ${ratio(row)}`).join(', '),
    goal: '>= 0.9x',
    verdict: verdict(holdfast.value >= 0.9 * raw.value),
  };
}

/** Holdfast against the best of the other subjects of one comparison, with the factor it must reach. */
function ratioGoal(list: BenchRow[], name: string, subject: string, factor: number, goal: string): Goal {
  const holdfast = of(list, subject);
  const best = list.filter((row) => row !== holdfast).sort((a, b) => b.value - a.value)[0];
  if (!holdfast || !best) return missing(name, goal);
  return {
    measurement: name,
    holdfast: `${text(holdfast)} (x${(holdfast.value / best.value).toFixed(2)})`,
    best: `${best.subject} ${text(best)}`,
    goal,
    verdict: verdict(holdfast.value >= factor * best.value),
  };
}

function mongoUncontended(rows: Rows): Goal {
  const name = 'MongoDB uncontended, ratio to raw grab + unlock';
  const goal = '2 commands per grant+release where the server findAndModify is atomic';
  const list = rows('mongodb', 'uncontended acquire+release', 'ops/s');
  const [raw, holdfast] = [of(list, RAW.mongodb), of(list, 'holdfast mongodb')];
  const commands = of(rows('mongodb', 'uncontended acquire+release', 'commands per acquire+release'), 'holdfast mongodb');
  if (!raw || !holdfast || !commands) return missing(name, goal);
  return {
    measurement: name,
    holdfast: `${(holdfast.value / raw.value).toFixed(2)}x (${text(commands)} commands per grant+release: ${commands.note ?? ''})`,
    best: `${text(raw)} ops/s raw`,
    goal,
    verdict: verdict(commands.value <= 2),
  };
}

function mongoHandoff(rows: Rows): Goal {
  const name = 'MongoDB hand-off';
  const goal = '<= 25 ms p50';
  const p50 = of(rows('mongodb', 'hand-off latency', 'p50'), 'holdfast mongodb');
  if (!p50) return missing(name, goal);
  return { measurement: name, holdfast: `${text(p50)} ms p50 (${p50.note ?? ''})`, best: '-', goal, verdict: verdict(p50.value <= 25) };
}

/** The test server (FerretDB on SQLite here) and, where the bench ran it, FerretDB on PostgreSQL: each said apart. */
function mongoHold(measured: readonly BenchRow[]): Goal {
  const subjects = [
    ...new Set(measured.filter((row) => row.module === 'mongodb' && row.group.startsWith('hold ')).map((row) => row.subject)),
  ];
  const runs = subjects.map((subject) => {
    const find = (metric: string): BenchRow | undefined =>
      measured.find((row) => row.module === 'mongodb' && row.subject === subject && row.group.startsWith('hold ') && row.metric === metric);
    return { subject, taken: find('locks taken'), ms: find('time to take them'), rate: find('take rate') };
  });
  const first = runs[0]?.taken;
  const target = Number(/^hold (\d+) locks$/.exec(first?.group ?? '')?.[1] ?? 10_000);
  const name = `MongoDB, acquire ${target} locks`;
  const goal = `${target} held within 60 s on the test server (FerretDB: on its PostgreSQL backend, SQLite being the limit)`;
  const complete = runs.filter((run) => run.taken && run.ms);
  if (complete.length === 0) return missing(name, goal);
  const met = (run: (typeof runs)[number]): boolean => run.taken!.value >= target && run.ms!.value <= 60_000;
  return {
    measurement: name,
    holdfast: complete
      .map(
        ({ subject, taken, ms, rate }) =>
          `${subject}: ${text(taken!)} in ${(ms!.value / 1000).toFixed(1)} s (${text(rate)}/s)${taken!.note ? `, ${taken!.note}` : ''}`,
      )
      .join('; '),
    best: '-',
    goal,
    verdict: verdict(complete.some(met)),
  };
}

/** A table of goals as printed at the end of a run. */
export function renderGoals(goals: readonly Goal[], title = 'issue 15 table (this run):'): string {
  const lines = [title];
  for (const goal of goals) {
    lines.push(`  [${goal.verdict}] ${goal.measurement}`, `      holdfast: ${goal.holdfast}`);
    if (goal.best !== '-') lines.push(`      best peer / floor: ${goal.best}`);
    lines.push(`      goal: ${goal.goal}`);
  }
  return lines.join('\n');
}
