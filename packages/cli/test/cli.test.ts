import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createLockProvider } from '@holdfast/core';
import { within } from '@holdfast/test-harness/helpers';
import { describe, expect, test } from 'vitest';
import { main } from '../src/main.js';

const BIN = fileURLToPath(new URL('../bin/holdfast.js', import.meta.url));
const execFileAsync = promisify(execFile);

/** The CLI as a user runs it: no HOLDFAST_URL unless a test sets one. */
async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const { HOLDFAST_URL: _ignored, ...inherited } = process.env;
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [BIN, ...args], { env: { ...inherited, ...env }, timeout: 20_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('holdfast CLI', () => {
  test('demo on the embedded memory backend finishes with zero violations', async () => {
    const result = await cli(['demo', '--workers', '4', '--keys', '2', '--seconds', '1']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/acquisitions in .* 0 violations/);
    expect(result.stdout).toMatch(/handoff p99/);
  });

  test('run passes the key and token to the command and exits with its code', async () => {
    const result = await cli([
      'run',
      '--backend',
      'memory:',
      'cli-test/env',
      '--',
      'sh',
      '-c',
      'echo "$HOLDFAST_LOCK_KEY:$HOLDFAST_LOCK_TOKEN"; exit 7',
    ]);
    expect(result.code).toBe(7);
    expect(result.stdout.trim()).toBe('cli-test/env:1');
  });

  test.each([
    [['run', '--wait', 'soon', 'k', '--', 'true']],
    [['run', 'k']],
    [['run', '--nope', 'k', '--', 'true']],
    [['demo', '--workers', '0']],
    [['inspect']],
    [['frobnicate']],
    [['run', 'k', '--', 'true']],
    [['inspect', 'k']],
    [['run', '--backend', 'redis://127.0.0.1:notaport', 'k', '--', 'true']],
    [['run', '--backend', 'nosuch://x', 'k', '--', 'true']],
    [['inspect', '--backend', 'memory:', 'bad//key']],
    [['list', '--backend', 'memory:', 'a', 'b']],
    [['list', '--backend', 'memory:', 'bad\u0001prefix']],
    [['list']],
    [['run', '--backend', 'memory:', 'bad//key', '--', 'true']],
  ])('bad usage %j exits 2 with the usage text', async (args) => {
    const result = await cli(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/usage:/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  test('without --backend or HOLDFAST_URL, run refuses (exit 2) and says how to configure a backend', async () => {
    const result = await cli(['run', 'k', '--', 'true']);
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toMatch(/no backend: pass --backend URL or set HOLDFAST_URL/);
  });

  test('HOLDFAST_URL selects the backend when --backend is absent', async () => {
    const result = await cli(['inspect', 'k'], { HOLDFAST_URL: 'memory:' });
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('k: free');
  });

  test('list on a backend with nothing held says so; --json prints []', async () => {
    expect((await cli(['list', '--backend', 'memory:'])).stdout.trim()).toBe('(no locks held)');
    const json = await cli(['list', '--backend', 'memory:', '--json', 'cli-test/']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([]);
  });

  test('an unreachable backend exits 69 with one line on stderr', async () => {
    const result = await cli(['inspect', '--backend', 'redis://127.0.0.1:1', 'k']);
    expect(result.code).toBe(69);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });

  test.each([['run'], ['inspect'], ['list'], ['demo']])('%s --help prints its own help and exits 0', async (command) => {
    const result = await cli([command, '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^holdfast ${command} `));
  });

  test('--version prints the package version', async () => {
    const result = await cli(['--version']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  test('the command does not outlive a runner killed with SIGKILL', async () => {
    const runner = spawn(
      process.execPath,
      [BIN, 'run', '--backend', 'memory:', '--grace', '1s', 'cli-test/orphan', '--', 'sh', '-c', 'echo $$; exec sleep 30'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const [chunk] = (await within(once(runner.stdout!, 'data'), 5000, 'the command starts')) as [Buffer];
    const commandPid = Number(chunk.toString().trim());
    expect(alive(commandPid)).toBe(true);
    runner.kill('SIGKILL');
    await expect
      .poll(() => alive(commandPid), {
        timeout: 3000,
        interval: 20,
        message: 'the command was still running 3 s after its runner was killed',
      })
      .toBe(false);
  });

  test('run exits 75 when the lock stays held elsewhere past --wait', async () => {
    const locks = await createLockProvider('memory:');
    try {
      expect(await locks.tryAcquire('cli-test/busy')).not.toBeNull();
      expect(await main(['run', '--backend', 'memory:', '--wait', '200ms', 'cli-test/busy', '--', 'true'])).toBe(75);
    } finally {
      await locks.close();
    }
  });

  test('run stops the command when the lock is lost and exits 76', async () => {
    const admin = await createLockProvider('memory:');
    try {
      const started = performance.now();
      const running = main(['run', '--backend', 'memory:', '--grace', '2s', 'cli-test/lost', '--', 'sleep', '30']);
      await expect.poll(() => admin.inspect('cli-test/lost'), { timeout: 5000, interval: 20 }).not.toBeNull();
      expect(await admin.forceRelease('cli-test/lost')).toBe(true);
      expect(await running).toBe(76);
      // SIGTERM ended sleep at once; SIGKILL after the 2 s grace was not needed.
      expect(performance.now() - started).toBeLessThan(2000);
    } finally {
      await admin.close();
    }
  });

  test('--shell runs one string through /bin/sh', async () => {
    const result = await cli(['run', '--backend', 'memory:', '--shell', 'cli-test/shell', '--', 'echo a && echo b']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('a\nb\n');
  });

  test('--conflict-exit-code replaces 75 when the key stays busy; the wait is announced on stderr unless --quiet', async () => {
    const locks = await createLockProvider('memory:');
    try {
      expect(await locks.tryAcquire('cli-test/conflict')).not.toBeNull();
      const errors: string[] = [];
      const original = console.error;
      console.error = (line: string) => void errors.push(line);
      try {
        expect(
          await main(['run', '--backend', 'memory:', '--wait', '100ms', '--conflict-exit-code', '9', 'cli-test/conflict', '--', 'true']),
        ).toBe(9);
        expect(errors.join('\n')).toMatch(/waiting for lock "cli-test\/conflict" for up to 100 ms/);
        errors.length = 0;
        expect(await main(['run', '--backend', 'memory:', '--quiet', '--wait', '100ms', 'cli-test/conflict', '--', 'true'])).toBe(75);
        expect(errors).toEqual([]);
      } finally {
        console.error = original;
      }
    } finally {
      await locks.close();
    }
  });

  test('release --force frees a held key and its holder learns it lost the lock; without --force it is a usage error', async () => {
    const locks = await createLockProvider('memory:');
    try {
      const held = await locks.tryAcquire('cli-test/release');
      expect(await main(['release', '--backend', 'memory:', 'cli-test/release'])).toBe(2);
      expect(held!.signal.aborted).toBe(false);
      expect(await main(['release', '--force', '--backend', 'memory:', 'cli-test/release'])).toBe(0);
      expect(held!.signal.reason).toMatchObject({ code: 'HOLDFAST_LOST' });
      expect(await locks.inspect('cli-test/release')).toBeNull();
    } finally {
      await locks.close();
    }
  });

  test('inspect --json describes the holder', async () => {
    const result = await cli(['inspect', '--backend', 'memory:', '--json', 'cli-test/free']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toBeNull();
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
