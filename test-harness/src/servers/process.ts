import { spawn } from 'node:child_process';
import { trackPid, untrackPid } from './cleanup.js';

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  /** True once the process has exited. */
  exited(): boolean;
  /** Resolves when the process has exited. */
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last lines the process wrote (stdout and stderr), for error messages. */
  outputTail(lines?: number): string;
  /** The stop signal (SIGTERM by default), then SIGKILL after graceMs. Resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL: a crash, as seen by peers. */
  kill(): Promise<void>;
}

export interface SpawnOptions {
  cwd?: string;
  /** Run as this user (needs root): PostgreSQL refuses to run as root. */
  uid?: number;
  gid?: number;
  /** The signal stop() sends first; SIGTERM unless the server shuts down faster on another. */
  stopSignal?: NodeJS.Signals;
}

export function spawnServer(name: string, command: string, args: string[], opts: SpawnOptions = {}): ManagedProcess {
  const child = spawn(command, args, { cwd: opts.cwd, uid: opts.uid, gid: opts.gid, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const take = (chunk: Buffer): void => {
    output += chunk.toString();
    if (output.length > 256_000) output = output.slice(-128_000);
  };
  child.stdout.on('data', take);
  child.stderr.on('data', take);
  let hasExited = false;
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('error', (err) => {
      output += `\nspawn error: ${err.message}`;
      hasExited = true;
      resolve({ code: null, signal: null });
    });
    child.on('exit', (code, signal) => {
      hasExited = true;
      if (child.pid !== undefined) untrackPid(child.pid);
      resolve({ code, signal });
    });
  });
  if (child.pid !== undefined) trackPid(child.pid);

  const signalAndWait = async (signal: NodeJS.Signals, graceMs: number): Promise<void> => {
    if (hasExited) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await done;
    clearTimeout(timer);
  };

  return {
    name,
    pid: child.pid ?? -1,
    exited: () => hasExited,
    done,
    outputTail: (lines = 30) => output.trim().split('\n').slice(-lines).join('\n'),
    stop: (graceMs = 5000) => signalAndWait(opts.stopSignal ?? 'SIGTERM', graceMs),
    kill: () => signalAndWait('SIGKILL', 5000),
  };
}

/** Runs a setup command (initdb, mariadb-install-db) to the end; rejects with its output unless it exits 0. */
export async function runToCompletion(
  name: string,
  command: string,
  args: string[],
  opts: SpawnOptions = {},
  timeoutMs = 60_000,
): Promise<void> {
  const proc = spawnServer(name, command, args, opts);
  const timer = setTimeout(() => void proc.kill(), timeoutMs);
  const { code, signal } = await proc.done;
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${name} exited with ${code ?? signal}:\n${proc.outputTail()}`);
}
