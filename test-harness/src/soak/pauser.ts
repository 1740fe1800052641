import type { ChildProcess } from 'node:child_process';
import type { FencedStore } from './fenced-store.js';

export interface PauseFigures {
  pauses: number;
  /** Pauses of a worker that held a lock at that moment. */
  pausesOfHolders: number;
}

/**
 * Stops (SIGSTOP) a random worker every `everyMs`, preferring one that holds a lock, for a random
 * time in `pauseMs`, then resumes it (SIGCONT). At most half the workers are stopped at once.
 */
export class Pauser {
  readonly figures: PauseFigures = { pauses: 0, pausesOfHolders: 0 };
  private readonly stopped = new Map<number, NodeJS.Timeout>();
  private readonly ticker: NodeJS.Timeout;

  constructor(
    private readonly workers: readonly ChildProcess[],
    private readonly store: FencedStore,
    private readonly pauseMs: readonly [number, number],
    everyMs: number,
  ) {
    this.ticker = setInterval(() => this.pauseOne(), everyMs);
  }

  /** Stops pausing and resumes every stopped worker. */
  stop(): void {
    clearInterval(this.ticker);
    for (const [worker, timer] of this.stopped) {
      clearTimeout(timer);
      this.resume(worker);
    }
  }

  private pauseOne(): void {
    if (this.stopped.size >= Math.floor(this.workers.length / 2)) return;
    const running = (worker: number): boolean => !this.stopped.has(worker) && this.workers[worker]!.exitCode === null;
    const holders = this.store.holders().filter(running);
    const candidates = holders.length > 0 && Math.random() < 0.8 ? holders : this.workers.map((_, i) => i).filter(running);
    if (candidates.length === 0) return;
    const worker = candidates[Math.floor(Math.random() * candidates.length)]!;
    const [low, high] = this.pauseMs;
    this.workers[worker]!.kill('SIGSTOP');
    this.store.workerStopped(worker);
    this.figures.pauses++;
    if (holders.includes(worker)) this.figures.pausesOfHolders++;
    this.stopped.set(
      worker,
      setTimeout(() => this.resume(worker), low + Math.random() * (high - low)),
    );
  }

  private resume(worker: number): void {
    this.stopped.delete(worker);
    this.store.workerResumed(worker);
    this.workers[worker]!.kill('SIGCONT');
  }
}
