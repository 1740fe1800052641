import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { createLockProvider } from '@holdfast/core';
import { describe, expect, test } from 'vitest';
import { main } from '../src/main.js';

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const execFileAsync = promisify(execFile);

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [BIN, ...args]);
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
    const result = await cli(['run', 'cli-test/env', '--', 'sh', '-c', 'echo "$HOLDFAST_LOCK_KEY:$HOLDFAST_LOCK_TOKEN"; exit 7']);
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
  ])('bad usage %j exits 2 with the usage text', async (args) => {
    const result = await cli(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/usage:/);
  });

  test('run exits 75 when the lock stays held elsewhere past --wait', async () => {
    const locks = await createLockProvider('memory:');
    try {
      expect(await locks.tryAcquire('cli-test/busy')).not.toBeNull();
      expect(await main(['run', '--wait', '200ms', 'cli-test/busy', '--', 'true'])).toBe(75);
    } finally {
      await locks.close();
    }
  });

  test('run stops the command with SIGTERM when the lock is lost', async () => {
    const admin = await createLockProvider('memory:');
    try {
      const running = main(['run', '--grace', '2s', 'cli-test/lost', '--', 'sleep', '30']);
      while (!(await admin.inspect('cli-test/lost'))) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await admin.forceRelease('cli-test/lost')).toBe(true);
      expect(await running).toBe(128 + 15);
    } finally {
      await admin.close();
    }
  });

  test('inspect --json describes the holder', async () => {
    const result = await cli(['inspect', '--json', 'cli-test/free']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toBeNull();
  });
});
