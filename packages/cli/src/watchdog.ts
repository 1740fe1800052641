/**
 * The watchdog between `holdfast run` and its command, run as its own process. It starts the
 * command in a new process group and ends that whole group when the runner says the lock is lost,
 * or when the runner's pipe closes: a runner that was killed (even SIGKILL) can no longer renew the
 * lock, so its command must not go on without it.
 *
 * Pipe protocol on fd 3, one line each. Runner -> watchdog: `stop` (lock lost), `signal <NAME>`
 * (forward). Watchdog -> runner: `exit <code> <signal>` when the command has ended.
 */
import { spawn } from 'node:child_process';
import { Socket } from 'node:net';
import { createInterface } from 'node:readline';

const [graceText, file, ...args] = process.argv.slice(2);
const graceMs = Number(graceText);
const pipe = new Socket({ fd: 3, readable: true, writable: true });
const child = spawn(file!, args, { stdio: 'inherit', detached: true });
let exited = false;
let killTimer: NodeJS.Timeout | undefined;

function signalGroup(signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // The group is already gone.
  }
}

function stopGroup(): void {
  if (killTimer) return;
  signalGroup('SIGTERM');
  killTimer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
}

// Terminal signals reach the runner, which forwards them; the watchdog itself stays until the command ends.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => undefined);

createInterface({ input: pipe }).on('line', (line) => {
  const [verb, name] = line.split(' ');
  if (verb === 'stop') stopGroup();
  else if (verb === 'signal' && name) signalGroup(name as NodeJS.Signals);
});
pipe.on('error', () => undefined);
pipe.on('close', () => {
  if (!exited) stopGroup();
});

child.on('error', (error) => {
  exited = true;
  pipe.end(`error ${error.message.replace(/\n/g, ' ')}\n`, () => process.exit(0));
});
child.on('exit', (code, signal) => {
  exited = true;
  clearTimeout(killTimer);
  // Whatever the command left in its group must not outlive it either.
  signalGroup('SIGKILL');
  if (pipe.destroyed || !pipe.writable) process.exit(0);
  pipe.end(`exit ${code ?? ''} ${signal ?? ''}\n`, () => process.exit(0));
});
