import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

/** A running `consul lock` child: what it printed so far, line by line, on stdout and stderr. */
export interface ConsulLockRun {
  readonly child: ChildProcess;
  readonly lines: string[];
  readonly errors: string[];
}

/**
 * `consul lock -http-addr=<agent> [options] <prefix> <command>` (the Go client: `-n=1` locks
 * `<prefix>/.lock`, `-n>1` is a semaphore on `<prefix>`). Every child is added to `children`, for
 * the test's clean-up.
 */
export function consulLock(binary: string, agent: string, args: readonly string[], children: ChildProcess[]): ConsulLockRun {
  const child = spawn(binary, ['lock', `-http-addr=${agent}`, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const lines: string[] = [];
  const errors: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
  createInterface({ input: child.stderr! }).on('line', (line) => errors.push(line));
  return { child, lines, errors };
}

/**
 * Stops every child still running: SIGTERM first, so `consul lock` ends its own child and releases
 * (nothing is left running), SIGKILL if it has not exited within 10 s.
 */
export async function stopAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}
