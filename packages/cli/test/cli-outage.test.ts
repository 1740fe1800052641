import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { createLockProvider } from '@holdfast/core';
import { addressOf, FaultProxy, urlAt } from '@holdfast/test-harness/faults';
import { until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe, expect, test } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/holdfast.js', import.meta.url));
const redis = await useBackend('redis');

describe.skipIf(!redis.url)(`holdfast run through an outage of a backend it reached before (${redis.label})`, { timeout: 30_000 }, () => {
  test('a waiting run says on stderr, once per interval, that the backend stopped answering, and ends at --wait', async () => {
    const key = `cli-test/${randomBytes(4).toString('hex')}`;
    const holder = await createLockProvider(redis.url!);
    const proxy = await FaultProxy.start(addressOf(redis.url!));
    try {
      const held = await holder.acquire(key, { ttlMs: 30_000, waitMs: 0 });
      const run = spawn(process.execPath, [BIN, 'run', '--backend', urlAt(redis.url!, proxy.address), '--wait', '4s', key, '--', 'true'], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      run.stderr!.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
      const exited = once(run, 'exit').then(([code]) => code as number);
      await until(() => stderr.includes('waiting for lock'), 10_000, 'the run waits for the held key');
      proxy.cut('refuse');
      const code = await within(exited, 15_000, 'the run ends');
      // 69 (the last failure) or 75: core counts an attempt cut short by the deadline, after the key
      // had answered busy, as a timeout (grant-taker.ts); which one comes last is a race with the clock.
      expect([69, 75], stderr).toContain(code);
      // The interval (10 s) is longer than the rest of the wait: one line, however many retries.
      expect(stderr.match(/not answering/g), stderr).toHaveLength(1);
      await held.release();
    } finally {
      await proxy.close();
      await holder.close();
    }
  });
});
