import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { childScript } from '../faults/child-script.js';
import type { FencedStore } from '../soak/fenced-store.js';
import type { RecordedEvent, WorkerEvent, WorkerSpec } from './events.js';
import type { NetworkRig } from './network.js';

/**
 * The worker processes of a run, each in its own client host, and the history they report: every
 * event stamped with when it reached the runner, and every begin, write and end passed to the fenced
 * store (which fences writes by token and counts stale ones).
 */
export class WorkerFleet {
  readonly events: RecordedEvent[] = [];
  readonly stderr: string[] = [];
  private readonly children: ChildProcess[] = [];

  constructor(
    private readonly rig: NetworkRig,
    private readonly store: FencedStore,
    private readonly startedAt: number,
  ) {}

  start(specs: readonly WorkerSpec[], hostOf: (worker: number) => string): void {
    // The built script, also when vitest runs this file from src/.
    const script = childScript('nemesis/worker.js');
    for (const spec of specs) {
      const child = this.rig.spawnIn(hostOf(spec.worker), process.execPath, [script, JSON.stringify(spec)], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      createInterface({ input: child.stdout! }).on('line', (line) => this.record(spec.worker, line));
      createInterface({ input: child.stderr! }).on('line', (line) => {
        if (this.stderr.length < 50) this.stderr.push(`worker ${spec.worker}: ${line}`);
      });
      this.children.push(child);
    }
  }

  /** Whether every worker has reported (its first call began): it is connected to nothing yet, but loaded and running. */
  allReporting(): boolean {
    return new Set(this.events.map((event) => event.worker)).size === this.children.length;
  }

  /** Workers whose process exited before the run ended (a crash of the worker, not a fault). */
  exited(): number[] {
    return this.children.flatMap((child, i) => (child.exitCode !== null || child.signalCode !== null ? [i] : []));
  }

  /** Closes their stdin (they exit), then kills any still there after `graceMs`. */
  async stop(graceMs = 3000): Promise<void> {
    const gone = this.children.map((child) =>
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((resolve) => child.once('exit', () => resolve())),
    );
    for (const child of this.children) child.stdin?.end();
    const timer = setTimeout(() => {
      for (const child of this.children) child.kill('SIGKILL');
    }, graceMs);
    await Promise.all(gone);
    clearTimeout(timer);
  }

  private record(worker: number, line: string): void {
    let event: WorkerEvent;
    try {
      event = JSON.parse(line) as WorkerEvent;
    } catch {
      return;
    }
    // The worker's own stamp (monotonic ms, see worker.ts), on this process's performance.now() scale.
    const stamped = (event as { t?: unknown }).t;
    const now = performance.now();
    const at = (typeof stamped === 'number' ? stamped - (Number(process.hrtime.bigint()) / 1e6 - now) : now) - this.startedAt;
    if (event.op === 'begin' || event.op === 'write' || event.op === 'end' || event.op === 'lost') {
      const { ok } = this.store.handle({
        op: event.op,
        worker,
        grant: event.grant,
        key: event.key,
        token: event.token,
        requestedAt: event.requestedAt,
      });
      if (event.op === 'write') event.accepted = ok;
    }
    this.events.push({ ...event, worker, at });
  }
}
