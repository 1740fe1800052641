import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { until } from '../helpers/until.js';
import { FencedStore } from '../soak/fenced-store.js';
import { checkHistory, type FaultMark, type HistoryFigures } from './check.js';
import { FakeClock } from './clock.js';
import type { WorkerSpec } from './events.js';
import { NetworkRig } from './network.js';
import type { NemesisControls, NemesisTarget, Scenario } from './types.js';
import { WorkerFleet } from './workers.js';

/** The bound past which isHeld() or release() counts as hung: twice core's default call timeout. */
const CHECK_CALL_BOUND_MS = 10_000;
/** acquire() must give up within its waitMs; this much more counts as hung. */
const ACQUIRE_SLACK_MS = 5000;
/**
 * How long the worker processes may take to load and report: Node loading the adapters took 13-16 s
 * on the loaded 2-core machine, and a fault timed from their spawn then fell before any worker ran.
 */
const WORKERS_START_BOUND_MS = 90_000;

export interface NemesisReport extends HistoryFigures {
  backend: string;
  scenario: string;
  summary: string;
  seconds: number;
  workers: number;
  keys: number;
  ttlMs: number;
  faults: FaultMark[];
  /** Writes the fence refused (a holder writing after a newer grant began). */
  staleWritesRejected: number;
  workersCrashed: number[];
  workerErrors: string[];
  doubleGrantsAllowed: string | null;
  tokenRegressionsAllowed: string | null;
  /** Whether every count the backend's guarantee excludes is zero. */
  ok: boolean;
}

export interface RunOptions {
  /** Planted defect: these workers keep holding after their signal says the lock is lost. */
  ignoreSignalWorkers?: readonly number[];
  log?: (line: string) => void;
  /** Writes every worker event and fault mark here, one JSON line each (the history the check read). */
  historyFile?: string;
}

/** Runs one scenario against one backend in a fresh network and returns its checked report. */
export async function runScenario(makeTarget: () => NemesisTarget, scenario: Scenario, options: RunOptions = {}): Promise<NemesisReport> {
  const log = options.log ?? ((line: string) => process.stderr.write(`[nemesis] ${line}\n`));
  const target = makeTarget();
  const clientHosts = Array.from({ length: scenario.workers }, (_, i) => `c${i}`);
  const rig = NetworkRig.create([...target.serverHosts, ...clientHosts]);
  const clocks = new Map((scenario.clockHosts ?? []).map((host) => [host, new FakeClock()] as const));
  const store = await FencedStore.start();
  const faults: FaultMark[] = [];
  let fleet: WorkerFleet | undefined;
  let startedAt = performance.now();
  let workersCrashed: number[] = [];
  let endedAt = 0;
  try {
    log(`${target.backend}/${scenario.name}: starting ${target.serverHosts.length} server(s) in namespaces`);
    await target.start(rig, clocks);
    const run = randomBytes(3).toString('hex');
    const keys = Array.from({ length: scenario.keys }, (_, i) => `holdfast-nemesis/${run}/key-${i}`);
    startedAt = performance.now();
    fleet = new WorkerFleet(rig, store, startedAt);
    const specs: WorkerSpec[] = clientHosts.map((_, worker) => ({
      worker,
      url: target.urlFor(worker),
      keys,
      ttlMs: scenario.ttlMs,
      waitMs: scenario.waitMs,
      holdMs: scenario.holdMs,
      writeEveryMs: scenario.writeEveryMs,
      ...(scenario.providerOptions ? { providerOptions: scenario.providerOptions } : {}),
      ignoreSignal: options.ignoreSignalWorkers?.includes(worker) ?? false,
    }));
    fleet.start(specs, (worker) => clientHosts[worker]!);
    const started = fleet;
    await until(() => started.allReporting() || started.exited().length > 0, WORKERS_START_BOUND_MS, 'every nemesis worker to report');
    // The scenario's times count from here: its faults must fall on running workers.
    const readyMs = performance.now() - startedAt;
    const controls: NemesisControls = {
      rig,
      target,
      clock: (host) => {
        const clock = clocks.get(host);
        if (!clock) throw new Error(`${host} runs under no fake clock in this scenario`);
        return clock;
      },
      keys,
      holders: () => store.holders(),
      holds: () => store.holds(),
      clientHost: (worker) => clientHosts[worker]!,
      mark: (action, heal) => {
        const at = Math.round(performance.now() - startedAt);
        faults.push(heal ? { at, action, heal: true, ...heal } : { at, action });
        log(`${(at / 1000).toFixed(1)} s: ${action}`);
      },
    };
    for (const step of scenario.steps) {
      await sleepUntil(startedAt + readyMs + step.atMs);
      await step.run(controls);
    }
    await sleepUntil(startedAt + readyMs + scenario.durationMs);
    // The run ends here: calls still open are judged now, not after the (slow, loaded) teardown.
    endedAt = performance.now() - startedAt;
    workersCrashed = fleet.exited();
  } finally {
    rig.heal();
    await fleet?.stop();
    await target.stop().catch((error: unknown) => log(`stopping the servers: ${String(error)}`));
    rig.destroy();
    for (const clock of clocks.values()) clock.remove();
    await store.close();
  }
  const bounds = { acquire: scenario.waitMs + ACQUIRE_SLACK_MS, isHeld: CHECK_CALL_BOUND_MS, release: CHECK_CALL_BOUND_MS };
  // In time order: each worker stamps its own events, and lines from different workers arrive interleaved.
  const events = [...fleet!.events].sort((a, b) => a.at - b.at);
  const figures = checkHistory(events, faults, bounds, endedAt);
  if (options.historyFile) {
    const lines = [...faults.map((fault) => ({ ...fault, op: 'fault' })), ...events].sort((a, b) => a.at - b.at);
    writeFileSync(options.historyFile, lines.map((line) => JSON.stringify(line)).join('\n'));
  }
  const s = store.figures;
  const report: NemesisReport = {
    backend: target.backend,
    scenario: scenario.name,
    summary: scenario.summary,
    seconds: Math.round(endedAt / 100) / 10,
    workers: scenario.workers,
    keys: scenario.keys,
    ttlMs: scenario.ttlMs,
    faults,
    ...figures,
    staleWritesRejected: s.staleWritesRejected,
    workersCrashed,
    workerErrors: fleet!.stderr,
    doubleGrantsAllowed: scenario.doubleGrantsAllowed ?? null,
    tokenRegressionsAllowed: scenario.tokenRegressionsAllowed ?? null,
    ok: false,
  };
  report.ok =
    (scenario.doubleGrantsAllowed !== undefined || figures.doubleGrants === 0) &&
    figures.staleWritesAccepted === 0 &&
    (scenario.tokenRegressionsAllowed !== undefined || figures.tokenRegressions === 0) &&
    (scenario.doubleGrantsAllowed !== undefined || figures.lossesUntold === 0) &&
    figures.hungCalls === 0 &&
    workersCrashed.length === 0 &&
    figures.grants > 0;
  return report;
}

async function sleepUntil(at: number): Promise<void> {
  const ms = at - performance.now();
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
}
