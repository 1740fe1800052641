import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { childScript } from '../faults/child-script.js';
import { within } from '../helpers/within.js';

/** The bench's side of holder-child.ts: one command at a time, each answer bounded. */
export class HolderProcess {
  private readonly replies: string[] = [];
  private waiting: ((line: string) => void) | undefined;
  private readonly exited: Promise<unknown>;

  private constructor(private readonly child: ChildProcess) {
    this.exited = once(child, 'exit');
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (this.waiting) this.waiting(line);
      else this.replies.push(line);
    });
  }

  /** Starts a holder on `url`; with `tap`, it counts its own traffic (see the wire command). */
  static start(url: string, tap?: 'http' | 'mongodb'): HolderProcess {
    const child = spawn(process.execPath, [childScript('bench/holder-child.js'), JSON.stringify({ url, ...(tap ? { tap } : {}) })], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    return new HolderProcess(child);
  }

  /** Sends a command; resolves with the reply's words after its first, rejects on ERROR or after `ms`. */
  async send(command: string, ms = 60_000): Promise<string[]> {
    this.child.stdin!.write(`${command}\n`);
    const gone = this.exited.then(() => Promise.reject(new Error('holder process exited')));
    const line = await within(Promise.race([this.nextLine(), gone]), ms, `holder process: answer to "${command}"`);
    const [word, ...rest] = line.split(' ');
    if (word === 'ERROR') throw new Error(`holder process: ${command}: ${rest.join(' ')}`);
    return rest;
  }

  /** Closes the holder's provider (bounded) and waits for the process to end. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    this.child.stdin!.end();
    await within(this.exited, 20_000, 'holder process to exit').catch(() => this.kill());
  }

  /** Ends the holder at once, without releasing: for many locks the caller removes itself. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGKILL');
    await within(this.exited, 10_000, 'killed holder process to exit');
  }

  private nextLine(): Promise<string> {
    const ready = this.replies.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    return new Promise((resolve) => {
      this.waiting = (line) => {
        this.waiting = undefined;
        resolve(line);
      };
    });
  }
}
