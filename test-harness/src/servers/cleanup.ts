import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Everything started here must die with the test process, even when it is killed with SIGKILL
// (a vitest worker torn down, a CI timeout). Three layers: stop() in tests; 'exit'/signal handlers;
// a detached watchdog that notices our death by EOF on its stdin and kills what is left.

const pids = new Set<number>();
const dirs = new Set<string>();
let watchdog: ChildProcess | undefined;
let handlersInstalled = false;

const WATCHDOG = `
const pids = new Set(), dirs = new Set();
let buf = '';
process.stdin.on('data', (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\\n')) >= 0) {
    const line = buf.slice(0, i); buf = buf.slice(i + 1);
    const [op, arg] = [line.slice(0, 2), line.slice(2)];
    if (op === '+p') pids.add(Number(arg)); else if (op === '-p') pids.delete(Number(arg));
    else if (op === '+d') dirs.add(arg); else if (op === '-d') dirs.delete(arg);
  }
});
process.stdin.on('end', () => {
  for (const p of pids) { try { process.kill(p, 'SIGKILL'); } catch {} }
  setTimeout(() => {
    for (const d of dirs) { try { require('fs').rmSync(d, { recursive: true, force: true }); } catch {} }
    process.exit(0);
  }, 500);
});
`;

function tellWatchdog(line: string): void {
  if (!watchdog) {
    watchdog = spawn(process.execPath, ['-e', WATCHDOG], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
    watchdog.on('error', () => (watchdog = undefined));
    // Without a watchdog the exit handlers still run; a broken pipe must not crash the tests.
    watchdog.stdin?.on('error', () => (watchdog = undefined));
    watchdog.unref();
    (watchdog.stdin as unknown as { unref(): void }).unref();
  }
  watchdog.stdin?.write(line + '\n');
}

function killAllNow(): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  pids.clear();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  killAllNow();
  process.off(signal, onSignal);
  // Restore the default behaviour (terminate) unless someone else handles the signal.
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', killAllNow);
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, onSignal);
}

export function trackPid(pid: number): void {
  installHandlers();
  pids.add(pid);
  tellWatchdog(`+p${pid}`);
}

export function untrackPid(pid: number): void {
  pids.delete(pid);
  tellWatchdog(`-p${pid}`);
}

/** A fresh directory under os.tmpdir(), removed at stop or at process exit at the latest. */
export function makeTempDir(prefix: string): string {
  installHandlers();
  const dir = mkdtempSync(join(tmpdir(), `holdfast-${prefix}-`));
  dirs.add(dir);
  tellWatchdog(`+d${dir}`);
  return dir;
}

export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);
  tellWatchdog(`-d${dir}`);
}
