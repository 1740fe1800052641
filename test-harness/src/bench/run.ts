import { consulBench } from './consul.js';
import { etcdBench } from './etcd.js';
import { evaluateGoals, type Goal } from './goals.js';
import { type MachineNote, watchMachine } from './machine.js';
import { memoryBench } from './memory.js';
import { mongodbBench } from './mongodb.js';
import { redisBench } from './redis.js';
import type { BenchSettings } from './settings.js';
import { mysqlBench, postgresBench } from './sql.js';
import type { BenchModule, BenchRow } from './types.js';
import { zookeeperBench } from './zookeeper.js';

export const MODULES: readonly BenchModule[] = [
  memoryBench,
  redisBench,
  consulBench,
  mongodbBench,
  postgresBench,
  mysqlBench,
  etcdBench,
  zookeeperBench,
];

export interface BenchResult {
  readonly startedAt: string;
  readonly seconds: number;
  readonly settings: BenchSettings;
  readonly machine: MachineNote;
  /** What each module measured on, as the server says it. */
  readonly servers: Record<string, string>;
  readonly rows: BenchRow[];
  /** Modules and steps that could not run, with the reason. */
  readonly skipped: string[];
  readonly goals: Goal[];
}

/** Runs the selected modules one after another (each side by side inside) and collects their rows. */
export async function runBench(
  settings: BenchSettings,
  log: (line: string) => void = () => undefined,
  modules = MODULES,
): Promise<BenchResult> {
  const startedAt = new Date();
  const started = performance.now();
  const machine = watchMachine();
  const rows: BenchRow[] = [];
  const servers: Record<string, string> = {};
  const skipped: string[] = [];
  for (const module of modules) {
    if (settings.only.length > 0 ? !settings.only.includes(module.name) : module.optional) continue;
    const moduleStarted = performance.now();
    log(`${module.name}...`);
    try {
      const result = await module.run(settings, (line) => log(`${module.name}: ${line}`));
      servers[module.name] = result.server;
      rows.push(...result.rows.map((row) => ({ ...row, module: module.name })));
      skipped.push(...result.failures.map((failure) => `${module.name}: ${failure}`));
      log(`${module.name}: done in ${((performance.now() - moduleStarted) / 1000).toFixed(0)} s`);
    } catch (error) {
      skipped.push(`${module.name}: ${(error as Error).message}`);
      log(`${module.name}: not measured: ${(error as Error).message}`);
    }
  }
  return {
    startedAt: startedAt.toISOString(),
    seconds: (performance.now() - started) / 1000,
    settings,
    machine: machine.stop(),
    servers,
    rows,
    skipped,
    goals: evaluateGoals(rows),
  };
}
