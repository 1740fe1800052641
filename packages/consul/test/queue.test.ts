import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { codeOf, rejection, until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';
import { printed } from './child-output.js';
import { queueKeys } from './queue-keys.js';

const consul = await useBackend('consul');
const DIST = fileURLToPath(new URL('../dist/index.js', import.meta.url));

describe.skipIf(!consul.url)('the wait queue: each waiter watches only the one before it', () => {
  const http = consul.url?.replace('consul://', 'http://') ?? '';
  const providers: LockProvider[] = [];
  const children: ChildProcess[] = [];
  const provider = (prefix: string): LockProvider => {
    const created = createConsulProvider({ url: http, prefix, lockDelayMs: 1000 });
    providers.push(created);
    return created;
  };
  const queued = (prefix: string, key: string, count: number, what: string): Promise<number> =>
    until(async () => (await queueKeys(http, prefix, key)).length === count, 5000, what, { everyMs: 10 });
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await within(Promise.all(providers.splice(0).map((p) => p.close())), 10_000, 'every provider closed');
  });

  test('waiters of different providers are served in the order they queued', async () => {
    const prefix = `holdfast-fifo-${randomBytes(3).toString('hex')}`;
    const held = await provider(prefix).acquire('job');
    const served: number[] = [];
    const waits: Promise<void>[] = [];
    for (let i = 0; i < 5; i++) {
      const lock = provider(prefix).acquire('job', { waitMs: 30_000 });
      waits.push(
        lock.then(async (granted) => {
          served.push(i);
          await granted.release();
        }),
      );
      await queued(prefix, 'job', i + 1, `waiter ${i} queued`);
    }
    await held.release();
    await within(Promise.all(waits), 20_000, 'every waiter served');
    expect(served).toEqual([0, 1, 2, 3, 4]);
    await queued(prefix, 'job', 0, 'the queue empty once everyone was served');
  }, 40_000);

  test('an aborted waiter leaves its place at once; the one behind it is served next', async () => {
    const prefix = `holdfast-abort-${randomBytes(3).toString('hex')}`;
    const held = await provider(prefix).acquire('job');
    const gaveUp = new AbortController();
    const first = provider(prefix).acquire('job', { waitMs: 30_000, signal: gaveUp.signal });
    await queued(prefix, 'job', 1, 'the first waiter queued');
    const second = provider(prefix).acquire('job', { waitMs: 30_000 });
    await queued(prefix, 'job', 2, 'the second waiter queued');
    gaveUp.abort(new Error('gave up'));
    expect(codeOf(await within(rejection(first), 1000, 'the aborted acquire rejects'))).toBe(ErrorCode.Aborted);
    await queued(prefix, 'job', 1, "the aborted waiter's entry deleted");
    await held.release();
    const lock = await within(second, 3000, 'the second waiter served promptly');
    expect(await lock.isHeld()).toBe(true);
    await lock.release();
    await queued(prefix, 'job', 0, 'the queue empty');
  }, 30_000);

  test('a waiter whose process is SIGKILLed holds the queue up no longer than its session TTL bound', async () => {
    const prefix = `holdfast-killed-${randomBytes(3).toString('hex')}`;
    const held = await provider(prefix).acquire('job');
    const script = `
      const { createConsulProvider } = await import(${JSON.stringify(DIST)});
      const provider = createConsulProvider({ url: ${JSON.stringify(http)}, prefix: ${JSON.stringify(prefix)}, lockDelayMs: 1000 });
      process.stdout.write('WAITING\\n');
      await provider.acquire('job', { waitMs: 120000, ttlMs: 20000 });
      process.stdout.write('GRANTED\\n');
      setInterval(() => undefined, 1 << 30);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    const lines: string[] = [];
    child.stdout!.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
    expect(await printed(lines, 'WAITING', 20_000)).toBe(true);
    await queued(prefix, 'job', 1, "the child's entry queued");
    const behind = provider(prefix).acquire('job', { waitMs: 60_000 });
    await queued(prefix, 'job', 2, 'the waiter behind it queued');
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await within(exited, 5000, 'the killed child exits');
    const killedAt = Date.now();
    await held.release();
    // A 20 s lease's session has a 10 s TTL: Consul invalidates it within 2 x 10 s of its last renewal.
    const lock = await within(behind, 25_000, 'the waiter behind the killed one served');
    console.info(`[consul queue] served ${Date.now() - killedAt} ms after the waiter before it was killed`);
    expect(lines).not.toContain('GRANTED');
    await lock.release();
    await queued(prefix, 'job', 0, "the queue empty: the dead waiter's entry deleted by the one behind it");
  }, 60_000);

  test('a prefix ending in the queue suffix is refused before anything talks to Consul', () => {
    expect(() => createConsulProvider({ url: http, prefix: 'holdfast.queue' })).toThrow(
      expect.objectContaining({ code: ErrorCode.InvalidArgument }),
    );
  });
});
