import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

// Under the test runner this module is TypeScript source; the watchdog then runs from the build.
const WATCHDOG = import.meta.url.endsWith('.ts')
  ? new URL('../dist/watchdog.js', import.meta.url)
  : new URL('./watchdog.js', import.meta.url);

export type CommandEnd = { code: number | null; signal: NodeJS.Signals | null } | { error: string };

/**
 * A command run through the watchdog process (see watchdog.ts), so that it cannot outlive this
 * runner: if the runner dies, the watchdog's pipe closes and it ends the command's process group.
 */
export class SupervisedCommand {
  readonly ended: Promise<CommandEnd>;
  private readonly control: Writable;

  constructor(command: string[], env: NodeJS.ProcessEnv, graceMs: number) {
    const watchdog = spawn(process.execPath, [fileURLToPath(WATCHDOG), String(graceMs), ...command], {
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
      env,
    });
    const pipe = watchdog.stdio[3] as unknown as Readable & Writable;
    this.control = pipe;
    pipe.on('error', () => undefined);
    this.ended = new Promise((resolve) => {
      let end: CommandEnd = { error: 'the watchdog process ended without reporting' };
      createInterface({ input: pipe }).on('line', (line) => {
        const [verb, ...rest] = line.split(' ');
        if (verb === 'exit') {
          const [code, signal] = rest;
          end = { code: code ? Number(code) : null, signal: (signal || null) as NodeJS.Signals | null };
        } else if (verb === 'error') {
          end = { error: rest.join(' ') };
        }
      });
      watchdog.on('exit', () => resolve(end));
      watchdog.on('error', (error) => resolve({ error: error.message }));
    });
  }

  /** The lock is lost: SIGTERM the command's group, SIGKILL after the grace period. */
  stop(): void {
    this.send('stop');
  }

  forward(signal: NodeJS.Signals): void {
    this.send(`signal ${signal}`);
  }

  private send(line: string): void {
    if (this.control.writable) this.control.write(`${line}\n`);
  }
}
