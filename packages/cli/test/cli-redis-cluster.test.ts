// The CLI's `list` on a Redis Cluster: locks held on every primary are listed, through the
// redis+cluster:// URL (one SCAN per primary).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createLockProvider } from '@holdfast/core';
import { startRedisCluster } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll, describe, expect, test } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/holdfast.js', import.meta.url));
const cluster = (await needLocalBinary('redis-server')) ? null : await startRedisCluster();
afterAll(() => cluster?.stop(), 60_000);

describe.skipIf(!cluster)('holdfast list on a Redis Cluster', () => {
  test('lists the locks held on every primary', { timeout: 30_000 }, async () => {
    const provider = await createLockProvider(cluster!.url);
    // Enough keys that every primary (a third of the slots each) serves some: 24 keys miss one with odds below 1e-4.
    const keys = Array.from({ length: 24 }, (_, i) => `cli-cluster/${String(i).padStart(2, '0')}`);
    const locks = await Promise.all(keys.map((key) => provider.acquire(key, { waitMs: 2000 })));
    try {
      const owners = new Set<number>();
      for (const key of keys) {
        const { stdout } = await promisify(execFile)('redis-cli', [
          '-p',
          String(cluster!.ports[0]),
          'cluster',
          'keyslot',
          `holdfast:${key}`,
        ]);
        owners.add(await cluster!.primaryOf(Number(stdout)));
      }
      expect(owners.size, 'the keys live on every primary').toBe(3);
      const { stdout } = await promisify(execFile)(process.execPath, [BIN, 'list', '--backend', cluster!.url, '--json', 'cli-cluster/'], {
        timeout: 20_000,
      });
      const listed = (JSON.parse(stdout) as { key: string }[]).map((info) => info.key);
      expect(listed).toEqual(keys);
    } finally {
      await Promise.all(locks.map((lock) => lock.release()));
      await provider.close();
    }
  });
});
