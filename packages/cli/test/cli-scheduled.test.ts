import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createLockProvider } from '@holdfast/core';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe, expect, test } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/holdfast.js', import.meta.url));
const redis = await useBackend('redis');

async function holdfast(args: string[]): Promise<{ code: number; stderr: string; ms: number }> {
  const started = performance.now();
  try {
    const { stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { timeout: 20_000 });
    return { code: 0, stderr, ms: performance.now() - started };
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr, ms: performance.now() - started };
  }
}

describe.skipIf(!redis.url)(`holdfast run --at-least / --at-most (${redis.label})`, { timeout: 60_000 }, () => {
  test('a job that ends at once keeps the key until --at-least without keeping the process; a run meanwhile is skipped', async () => {
    const key = `cli-test/${randomBytes(4).toString('hex')}`;
    const job = (extra: string[] = []) =>
      holdfast(['run', '--backend', redis.url!, '--at-least', '8s', '--at-most', '20s', ...extra, key, '--', 'true']);
    const first = await job();
    expect(first.code, first.stderr).toBe(0);
    // The process left long before the at-least point: the lock stays on its lease, not on a timer.
    expect(first.ms).toBeLessThan(8000);
    const observer = await createLockProvider(redis.url!);
    try {
      const holder = await observer.inspect(key);
      expect(holder, 'the key was free before --at-least').not.toBeNull();
      expect(holder!.expiresAt!.getTime() - Date.now()).toBeGreaterThan(0);
      const second = await job(['--conflict-exit-code', '0']);
      expect(second.code).toBe(0);
      expect(second.stderr).toMatch(/skipped/);
      const third = await job();
      expect(third.code, 'a busy scheduled run is not skipped with 75').toBe(75);
      const waited = await job(['--wait', '15s']);
      expect(waited.code, waited.stderr).toBe(0);
    } finally {
      await observer.close();
    }
  });

  test('a command that outlives --at-most is stopped, and the run exits 76', async () => {
    const key = `cli-test/${randomBytes(4).toString('hex')}`;
    const run = await holdfast(['run', '--backend', redis.url!, '--at-most', '1s', '--grace', '500ms', key, '--', 'sleep', '20']);
    expect(run.code, run.stderr).toBe(76);
    expect(run.ms).toBeLessThan(5000);
  });
});
