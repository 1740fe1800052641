import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const TMUX = '/usr/bin/tmux';
/** One tmux command answers in milliseconds; this bounds a tmux server that hangs. */
const TMUX_COMMAND_MS = 10_000;
const run = promisify(execFile);

/**
 * A tmux server of the test's own (its own socket, its own config, never the user's), with one
 * detached pane of a fixed size running `command`. The pane stays after its command exits
 * (remain-on-exit), so the test can read the exit status and the screen it left behind.
 */
export class TmuxPane {
  private constructor(
    private readonly dir: string,
    private readonly socket: string,
  ) {}

  static readonly available = existsSync(TMUX);

  static async start(command: readonly string[], size = { columns: 200, rows: 30 }): Promise<TmuxPane> {
    const dir = mkdtempSync(join(tmpdir(), 'holdfast-tmux-'));
    const config = join(dir, 'tmux.conf');
    writeFileSync(config, 'set -g remain-on-exit on\nset -g status off\n');
    const pane = new TmuxPane(dir, join(dir, 'socket'));
    const shellCommand = command.map((word) => `'${word.replace(/'/g, `'\\''`)}'`).join(' ');
    await pane.tmux(['-f', config, 'new-session', '-d', '-s', 'test', '-x', String(size.columns), '-y', String(size.rows), shellCommand]);
    return pane;
  }

  /** The pane's visible text (the alternate screen while a program shows one). */
  async capture(): Promise<string> {
    return (await this.tmux(['capture-pane', '-p', '-t', 'test'])).trimEnd();
  }

  /** tmux's own view of the pane: `pane_dead`, `pane_dead_status`, `pane_pid`, `alternate_on`, `cursor_flag`. */
  async state(): Promise<Record<string, string>> {
    const names = ['pane_dead', 'pane_dead_status', 'pane_pid', 'alternate_on', 'cursor_flag'];
    const line = await this.tmux(['display-message', '-p', '-t', 'test', names.map((name) => `#{${name}}`).join('|')]);
    const values = line.trim().split('|');
    return Object.fromEntries(names.map((name, i) => [name, values[i] ?? '']));
  }

  /** The pid of the one process the pane's shell runs now (Linux: /proc). */
  async childPid(): Promise<number> {
    const shell = (await this.state())['pane_pid'];
    const children = readFileSync(`/proc/${shell}/task/${shell}/children`, 'utf8').trim().split(' ');
    if (children.length !== 1 || children[0] === '') throw new Error(`the pane's shell ${shell} runs ${children.length} processes`);
    return Number(children[0]);
  }

  async sendKeys(...keys: string[]): Promise<void> {
    await this.tmux(['send-keys', '-t', 'test', ...keys]);
  }

  /** Ends the tmux server (and whatever still runs in its pane) and removes its directory. */
  async close(): Promise<void> {
    try {
      await this.tmux(['kill-server']);
    } catch {
      // Already gone: nothing left to end.
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  private async tmux(args: readonly string[]): Promise<string> {
    const { stdout } = await run(TMUX, ['-S', this.socket, ...args], { timeout: TMUX_COMMAND_MS });
    return stdout;
  }
}
