// `holdfast watch` without a terminal: plain snapshots to a pipe, --once, and a backend that never answered.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createLockProvider } from '@holdfast/core';
import { until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe, expect, test } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/holdfast.js', import.meta.url));
const execFileAsync = promisify(execFile);
/** Node's start, the adapter's load and a few refreshes on a machine at a load of 20 and more. */
const OUTPUT_MS = 20_000;
/** close() is bounded by 5 s by default; the rest is the loaded machine. */
const EXIT_MS = 15_000;
const redis = await useBackend('redis');

describe.skipIf(!redis.url)(`holdfast watch to a pipe (${redis.label})`, { timeout: 3 * OUTPUT_MS + EXIT_MS }, () => {
  test('prints one plain snapshot per refresh (no escape codes), shows a lock taken meanwhile, and SIGTERM ends it with 0', async () => {
    const prefix = `watch-plain/${randomBytes(4).toString('hex')}/`;
    const child = spawn(process.execPath, [BIN, 'watch', '--backend', redis.url!, '--interval', '200ms', prefix], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = once(child, 'exit');
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const locks = await createLockProvider(redis.url!);
    try {
      await until(
        () => (output.match(/\(no locks held\)/g) ?? []).length >= 2,
        OUTPUT_MS,
        () => `two empty snapshots; got:\n${output}`,
      );
      const lock = (await locks.tryAcquire(`${prefix}job`, { reason: 'piped', ttlMs: 60_000 }))!;
      const row = new RegExp(`^${prefix}job\\s+${locks.owner}\\s+${lock.token}\\s+piped\\s+\\[#+-*\\] \\d+\\.\\ds$`, 'm');
      await until(
        () => row.test(output),
        OUTPUT_MS,
        () => `the lock's row; got:\n${output}`,
      );
      await lock.release();
      const shown = output.length;
      await until(
        () => output.slice(shown).includes('(no locks held)'),
        OUTPUT_MS,
        () => `the release; got:\n${output}`,
      );
      child.kill('SIGTERM');
      const [code] = await within(exited, EXIT_MS, 'holdfast watch exits on SIGTERM');
      expect(code).toBe(0);
      expect(output).not.toContain('\x1b');
      expect(output.split('\n\n').length).toBeGreaterThanOrEqual(4);
    } finally {
      child.kill('SIGKILL');
      await locks.close();
    }
  });

  test('--once prints one snapshot and exits 0', async () => {
    const prefix = `watch-plain/${randomBytes(4).toString('hex')}/`;
    const locks = await createLockProvider(redis.url!);
    try {
      const lock = (await locks.tryAcquire(`${prefix}a`, { ttlMs: 60_000 }))!;
      const { stdout } = await execFileAsync(process.execPath, [BIN, 'watch', '--once', '--backend', redis.url!, prefix], {
        timeout: OUTPUT_MS,
      });
      const lines = stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(new RegExp(`^holdfast watch: redis://127\\.0\\.0\\.1:\\d+ prefix "${prefix}".*  1 held  `));
      expect(lines.slice(2)).toEqual([
        expect.stringMatching(/^KEY\s+HOLDER\s+TOKEN\s+REASON\s+LEASE$/),
        expect.stringContaining(`${lock.token}`),
      ]);
    } finally {
      await locks.close();
    }
  });
});

test('a backend that never answered is exit 69 at once, with the cause, before any screen is drawn', { timeout: OUTPUT_MS }, async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const failed = await execFileAsync(process.execPath, [BIN, 'watch', '--backend', `redis://127.0.0.1:${port}`], {
    timeout: OUTPUT_MS,
  }).then(
    () => ({ code: 0, stdout: '', stderr: '' }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
  expect(failed.code).toBe(69);
  expect(failed.stdout).toBe('');
  expect(failed.stderr).toMatch(/^holdfast: redis backend failed: .*ECONNREFUSED/);
});
