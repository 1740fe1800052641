import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createLockProvider } from '@holdfast/core';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterAll, describe, expect, test } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/holdfast.js', import.meta.url));
const redis = await useBackend('redis');
const scratch = mkdtempSync(join(tmpdir(), 'holdfast-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function holdfast(args: string[]): Promise<number> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  return once(child, 'exit').then(([code]) => code as number);
}

describe.skipIf(!redis.url)(`holdfast CLI across processes (${redis.label})`, () => {
  test('two `holdfast run` processes on one key never run their commands at the same time', async () => {
    const key = `cli-test/${randomBytes(4).toString('hex')}`;
    const journal = join(scratch, 'journal');
    const critical = `echo "start $$" >> ${journal}; sleep 0.5; echo "end $$" >> ${journal}`;
    const runs = Array.from({ length: 3 }, () =>
      holdfast(['run', '--backend', redis.url!, '--wait', '20s', key, '--', 'sh', '-c', critical]),
    );
    expect(await Promise.all(runs)).toEqual([0, 0, 0]);
    const lines = readFileSync(journal, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(6);
    for (let i = 0; i < lines.length; i += 2) {
      const pid = lines[i]!.split(' ')[1];
      expect([lines[i], lines[i + 1]]).toEqual([`start ${pid}`, `end ${pid}`]);
    }
  });

  test('run exits 75 while another process holds the key; inspect shows that holder', async () => {
    const key = `cli-test/${randomBytes(4).toString('hex')}`;
    const holder = spawn(
      process.execPath,
      [BIN, 'run', '--backend', redis.url!, '--reason', 'long job', key, '--', 'sh', '-c', 'echo held; sleep 30'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    try {
      await once(holder.stdout!, 'data');
      expect(await holdfast(['run', '--backend', redis.url!, '--wait', '300ms', key, '--', 'true'])).toBe(75);
      const { stdout } = await promisify(execFile)(process.execPath, [BIN, 'inspect', '--backend', redis.url!, '--json', key]);
      const info = JSON.parse(stdout) as { reason: string; token: string };
      expect(info.reason).toBe('long job');
      expect(BigInt(info.token)).toBeGreaterThan(0n);
    } finally {
      holder.kill('SIGTERM');
      await once(holder, 'exit');
    }
  });

  test('list shows exactly the locks held under a prefix, by another process, as a table and as JSON', async () => {
    const prefix = `cli-test/${randomBytes(4).toString('hex')}/`;
    const locks = await createLockProvider(redis.url!);
    try {
      const first = await locks.tryAcquire(`${prefix}a`, { reason: 'listed' });
      const second = await locks.tryAcquire(`${prefix}b`);
      await (await locks.tryAcquire(`${prefix}released`))!.release();
      const run = (args: string[]) =>
        promisify(execFile)(process.execPath, [BIN, 'list', '--backend', redis.url!, ...args], { timeout: 20_000 });
      const listed = JSON.parse((await run(['--json', prefix])).stdout) as { key: string; owner: string; token: string; reason?: string }[];
      expect(listed.map((info) => info.key)).toEqual([`${prefix}a`, `${prefix}b`]);
      expect(listed.map((info) => info.owner)).toEqual([locks.owner, locks.owner]);
      expect(listed.map((info) => BigInt(info.token))).toEqual([first!.token, second!.token]);
      expect(listed[0]!.reason).toBe('listed');
      const table = (await run([prefix])).stdout.trim().split('\n');
      expect(table[0]).toMatch(/^KEY\s+HOLDER\s+TOKEN\s+EXPIRES\s+REASON$/);
      expect(table.slice(1).map((line) => line.split(/\s+/)[0])).toEqual([`${prefix}a`, `${prefix}b`]);
      await Promise.all([first!.release(), second!.release()]);
      expect((await run([prefix])).stdout.trim()).toBe('(no locks held)');
    } finally {
      await locks.close();
    }
  });
});
