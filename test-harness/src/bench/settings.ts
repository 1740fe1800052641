import { join } from 'node:path';

/** Sizes of one bench run. Every field has a flag and a HOLDFAST_BENCH_* variable (flags win). */
export interface BenchSettings {
  readonly quick: boolean;
  /** Module names to run; empty = memory, redis, consul and mongodb (postgres, mysql, etcd and zookeeper run when named). */
  readonly only: readonly string[];
  /** Throughput: each subject's total time, measured in alternating slices of sliceMs. */
  readonly throughputMs: number;
  readonly sliceMs: number;
  /** Hand-off rounds per subject (>= 100 keeps p99 below the maximum). */
  readonly rounds: number;
  /** Contention: numbers of contenders, the width of the many-keys case, time per subject and cell. */
  readonly contenders: readonly number[];
  readonly keys: number;
  readonly contentionMs: number;
  /** Locks the hold-many rows take, and the time they may spend taking them. */
  readonly hold: number;
  readonly holdBudgetMs: number;
  /** Uncontended operations in the passes that count commands and bytes. */
  readonly countedOps: number;
  /** Names (or name prefixes) of the steps to run in each module; empty = all. */
  readonly steps: readonly string[];
  readonly outDir: string;
  /** Where the SVG charts go (bench-handoff.svg, bench-throughput.svg); none when absent. */
  readonly chartsDir?: string;
}

const FULL = {
  throughputMs: 2000,
  sliceMs: 250,
  rounds: 100,
  contenders: [1, 8, 64],
  keys: 1000,
  contentionMs: 1500,
  hold: 10_000,
  holdBudgetMs: 60_000,
  countedOps: 200,
};

/** A smoke run: every row once, small and short (seconds per backend). */
const QUICK: typeof FULL = {
  throughputMs: 300,
  sliceMs: 50,
  rounds: 5,
  contenders: [1, 8],
  keys: 50,
  contentionMs: 200,
  hold: 300,
  holdBudgetMs: 10_000,
  countedOps: 20,
};

/** A bad flag or argument: main prints the message and exits 2, without a stack. */
export class BenchUsageError extends Error {}

export const USAGE =
  'usage: npm run bench -- [memory|redis|consul|mongodb|postgres|mysql|etcd|zookeeper ...] [--quick] [--throughput-ms N] [--slice-ms N] [--rounds N] ' +
  '[--contenders 1,8,64] [--keys N] [--contention-ms N] [--hold N] [--hold-budget-ms N] [--counted-ops N] [--steps uncontended,contention] [--out DIR] [--charts DIR]';

export const MODULE_NAMES = ['memory', 'redis', 'consul', 'mongodb', 'postgres', 'mysql', 'etcd', 'zookeeper'] as const;

/** Reads flags, then HOLDFAST_BENCH_<FLAG> (e.g. HOLDFAST_BENCH_ROUNDS), then the defaults. */
export function parseBenchArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): BenchSettings {
  const flags = new Map<string, string>();
  const only: string[] = [];
  let quick = ['1', 'true', 'yes'].includes((env['HOLDFAST_BENCH_QUICK'] ?? '').toLowerCase());
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--quick') quick = true;
    else if (arg.startsWith('--')) {
      const value = argv[++i];
      if (value === undefined) throw new BenchUsageError(`${USAGE}\n(${arg} needs a value)`);
      flags.set(arg.slice(2), value);
    } else if ((MODULE_NAMES as readonly string[]).includes(arg)) only.push(arg);
    else throw new BenchUsageError(`${USAGE}\n(unknown argument "${arg}")`);
  }
  const base = quick ? QUICK : FULL;
  const text = (flag: string): string | undefined => {
    const given = flags.get(flag) ?? env[`HOLDFAST_BENCH_${flag.toUpperCase().replace(/-/g, '_')}`];
    flags.delete(flag);
    return given;
  };
  const int = (flag: string, fallback: number): number => {
    const given = text(flag);
    if (given === undefined) return fallback;
    const value = Number(given);
    if (!Number.isInteger(value) || value <= 0) throw new BenchUsageError(`--${flag} must be a positive integer, got "${given}"`);
    return value;
  };
  const contendersText = text('contenders');
  const contenders = contendersText === undefined ? base.contenders : contendersText.split(',').map(Number);
  if (contenders.some((n) => !Number.isInteger(n) || n <= 0))
    throw new BenchUsageError(`--contenders must look like 1,8,64, got "${contendersText}"`);
  const settings: BenchSettings = {
    quick,
    only,
    throughputMs: int('throughput-ms', base.throughputMs),
    sliceMs: int('slice-ms', base.sliceMs),
    rounds: int('rounds', base.rounds),
    contenders,
    keys: int('keys', base.keys),
    contentionMs: int('contention-ms', base.contentionMs),
    hold: int('hold', base.hold),
    holdBudgetMs: int('hold-budget-ms', base.holdBudgetMs),
    countedOps: int('counted-ops', base.countedOps),
    steps: (text('steps') ?? '').split(',').filter(Boolean),
    outDir: text('out') ?? join(cwd, 'bench-results'),
    ...optional('chartsDir', text('charts')),
  };

  if (flags.size > 0) throw new BenchUsageError(`${USAGE}\n(unknown flag --${[...flags.keys()][0]})`);
  return settings;
}

function optional<K extends string>(name: K, value: string | undefined): { [key in K]?: string } {
  return value === undefined ? {} : ({ [name]: value } as { [key in K]: string });
}
