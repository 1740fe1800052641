import { execFile } from 'node:child_process';

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CommandOptions {
  cwd: string;
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
}

/**
 * Runs a command to completion, killed (and reported with its output so far) if it outlives
 * timeoutMs. Resolves with the exit code instead of rejecting, so callers assert on it.
 */
export function runCommand(file: string, args: readonly string[], options: CommandOptions): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { cwd: options.cwd, env: options.env ?? cleanEnv(), timeout: options.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const killed = error !== null && (error as { killed?: boolean }).killed === true;
        if (killed) {
          reject(new Error(`${file} ${args.join(' ')} did not finish within ${options.timeoutMs} ms\n${stdout}\n${stderr}`));
          return;
        }
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The environment without the npm_* variables of the npm that runs the tests (its prefix, workspace, …). */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.toLowerCase().startsWith('npm_') && name !== 'INIT_CWD' && !name.startsWith('HOLDFAST_')) env[name] = value;
  }
  return { ...env, ...extra };
}

/** A failure message with the command's output, for expect(...).toBe(0) that says why. */
export function describeResult(what: string, result: CommandResult): string {
  return `${what} exited ${result.code}\n--- stdout\n${result.stdout.slice(-4000)}\n--- stderr\n${result.stderr.slice(-4000)}`;
}
