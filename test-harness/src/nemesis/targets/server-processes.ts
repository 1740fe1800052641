import { until } from '../../helpers/until.js';
import type { ManagedProcess } from '../../servers/process.js';

/** How often a start-up wait asks whether the servers are ready. */
const POLL_MS = 250;

/**
 * A nemesis target's server processes: started one by one, one replaced when the scenario restarts
 * it, all stopped at the end; and the start-up wait of every target: poll until the servers are
 * ready, fail at once when one of them exits, and name the last lines of each in the error.
 */
export class ServerProcesses {
  private readonly running: ManagedProcess[] = [];

  add(process: ManagedProcess): void {
    this.running.push(process);
  }

  /** Ends the process at `index` (SIGTERM, or SIGKILL: a crash) and starts `launch()` in its place. */
  async replace(index: number, launch: () => ManagedProcess, how: 'stop' | 'kill' = 'stop'): Promise<void> {
    const old = this.running[index];
    await (how === 'kill' ? old?.kill() : old?.stop());
    this.running[index] = launch();
  }

  /**
   * Polls `ready` (an error counts as not yet) until it says true. Rejects at once when a process
   * exited, and after `timeoutMs` with `detail()`; both name the last lines of every process.
   */
  async waitUntil(what: string, ready: () => Promise<boolean>, timeoutMs: number, detail?: () => string): Promise<void> {
    const exited = (): ManagedProcess | undefined => this.running.find((process) => process.exited());
    // An exited process ends the polling too, and is reported below rather than waited for.
    await until(async () => exited() !== undefined || (await ready().catch(() => false)), timeoutMs, `nemesis: ${what}`, {
      everyMs: POLL_MS,
    }).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}${detail ? ` (${detail()})` : ''}\n${this.tails()}`);
    });
    const dead = exited();
    if (dead) throw new Error(`nemesis: ${what}: ${dead.name} exited\n${this.tails()}`);
  }

  /** Every process, SIGTERM first (or SIGKILL: when the data goes with the run, a graceful stop only costs time). */
  async stopAll(how: 'stop' | 'kill' = 'stop'): Promise<void> {
    await Promise.all(this.running.map((process) => (how === 'kill' ? process.kill() : process.stop())));
  }

  private tails(lines = 25): string {
    return this.running.map((process) => `--- ${process.name}\n${process.outputTail(lines)}`).join('\n');
  }
}
