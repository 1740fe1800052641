// The CLI on PostgreSQL: `postgres://` is one of its built-in backends (no app code involved).
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe, expect, test } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/holdfast.js', import.meta.url));
const postgres = await useBackend('postgres');

describe.skipIf(!postgres.url)(`holdfast CLI on postgres (${postgres.label})`, { timeout: 30_000 }, () => {
  test('run holds the key while its command runs: inspect shows the holder, a second run exits 75, the key is free after', async () => {
    const url = postgres.url!;
    const key = `cli-test/${randomBytes(4).toString('hex')}`;
    const holder = spawn(
      process.execPath,
      [BIN, 'run', '--backend', url, '--reason', 'long job', key, '--', 'sh', '-c', 'echo held; sleep 30'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    try {
      await once(holder.stdout!, 'data');
      const { stdout } = await promisify(execFile)(process.execPath, [BIN, 'inspect', '--json', '--backend', url, key]);
      expect(JSON.parse(stdout)).toMatchObject({ key, reason: 'long job' });
      const second = spawn(process.execPath, [BIN, 'run', '--backend', url, '--wait', '300ms', key, '--', 'true'], { stdio: 'ignore' });
      expect((await once(second, 'exit'))[0]).toBe(75);
    } finally {
      holder.kill('SIGTERM');
      await once(holder, 'exit');
    }
    const after = spawn(process.execPath, [BIN, 'run', '--backend', url, key, '--', 'true'], { stdio: 'ignore' });
    expect((await once(after, 'exit'))[0]).toBe(0);
  });
});
