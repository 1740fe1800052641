import { createLockProvider } from '@holdfast/core';
import { within } from '@holdfast/test-harness/helpers';
import { describe, expect, test } from 'vitest';
import { main } from '../src/main.js';

/** `holdfast run --shared | --exclusive` and `--key` (several keys), on the memory backend, in-process (memory: is one store per process). */
describe('holdfast run with read-write and multi-key locks', () => {
  test('--shared runs side by side; --exclusive waits for them; the grant mode reaches the command', async () => {
    const admin = await createLockProvider('memory:');
    try {
      const readers = [1, 2].map(() =>
        main([
          'run',
          '--backend',
          'memory:',
          '--shared',
          '--quiet',
          'cli-rw/doc',
          '--',
          'sh',
          '-c',
          'test "$HOLDFAST_LOCK_MODE" = shared && sleep 0.4',
        ]),
      );
      await expect.poll(async () => (await admin.readWrite('cli-rw/doc').holders()).length, { timeout: 5000, interval: 10 }).toBe(2);
      const started = performance.now();
      const writer = main([
        'run',
        '--backend',
        'memory:',
        '--exclusive',
        '--quiet',
        'cli-rw/doc',
        '--',
        'sh',
        '-c',
        'test "$HOLDFAST_LOCK_MODE" = exclusive',
      ]);
      expect(await within(Promise.all(readers), 5000, 'the shared runs end')).toEqual([0, 0]);
      expect(await within(writer, 5000, 'the exclusive run ends')).toBe(0);
      // It ran after both readers released (they slept 0.4 s together, not one after the other).
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThan(250);
      expect(waited).toBeLessThan(2000);
      expect(await admin.readWrite('cli-rw/doc').holders()).toEqual([]);
    } finally {
      await admin.close();
    }
  });

  test('--key takes several keys all or none and hands their tokens to the command', async () => {
    const admin = await createLockProvider('memory:');
    try {
      const blocker = await admin.tryAcquire('cli-multi/b');
      expect(
        await main([
          'run',
          '--backend',
          'memory:',
          '--quiet',
          '--wait',
          '150ms',
          '--key',
          'cli-multi/a',
          '--key',
          'cli-multi/b',
          '--',
          'true',
        ]),
      ).toBe(75);
      expect(await admin.inspect('cli-multi/a'), 'a failed multi-key run kept a key').toBeNull();
      await blocker!.release();
      const script =
        'test "$HOLDFAST_LOCK_KEYS" = "cli-multi/a,cli-multi/b" && node -e "const t = JSON.parse(process.env.HOLDFAST_LOCK_TOKENS); process.exit(t[\'cli-multi/b\'] === \'2\' ? 0 : 3)"';
      expect(await main(['run', '--backend', 'memory:', '--key', 'cli-multi/b', '--key', 'cli-multi/a', '--', 'sh', '-c', script])).toBe(0);
      expect(await admin.inspect('cli-multi/a')).toBeNull();
      expect(await admin.inspect('cli-multi/b')).toBeNull();
    } finally {
      await admin.close();
    }
  });

  test('a multi-key run whose key is lost stops the command and exits 76', async () => {
    const admin = await createLockProvider('memory:');
    try {
      const running = main(['run', '--backend', 'memory:', '--quiet', '--key', 'cli-multi/x', '--key', 'cli-multi/y', '--', 'sleep', '30']);
      await expect.poll(() => admin.inspect('cli-multi/y'), { timeout: 5000, interval: 10 }).not.toBeNull();
      expect(await admin.forceRelease('cli-multi/y')).toBe(true);
      expect(await within(running, 5000, 'the run stops')).toBe(76);
      expect(await admin.inspect('cli-multi/x'), 'the other key was not released').toBeNull();
    } finally {
      await admin.close();
    }
  });

  test.each([
    [['run', '--backend', 'memory:', '--shared', '--exclusive', 'k', '--', 'true']],
    [['run', '--backend', 'memory:', '--shared', '--key', 'a', '--key', 'b', '--', 'true']],
    [['run', '--backend', 'memory:', '--key', 'a', '--key', 'a', '--', 'true']],
    [['run', '--backend', 'memory:', '--key', 'a']],
  ])('bad usage %j exits 2', async (args) => {
    expect(await main(args)).toBe(2);
  });
});
