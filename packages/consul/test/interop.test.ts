import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { LockProvider } from '@holdfast/core';
import { until, within } from '@holdfast/test-harness/helpers';
import { consulBinary } from '@holdfast/test-harness/servers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';
import { printed } from './child-output.js';
import { consulLock as runConsulLock, stopAll } from './consul-lock-cli.js';
import { queueKeys } from './queue-keys.js';

const consul = await useBackend('consul');
const binary = await consulBinary();
const PREFIX = 'holdfast-interop';
const children: ChildProcess[] = [];

/** `consul lock <prefix> <command>`: locks `<prefix>/.lock` with the Go client, as Holdfast key `<name>/.lock`. */
function consulLock(name: string, command: string, extra: string[] = []): { child: ChildProcess; lines: string[] } {
  return runConsulLock(binary!, consul.url!.replace('consul://', ''), [...extra, `${PREFIX}/${name}`, command], children);
}

describe.skipIf(!consul.url || !binary)('interoperability with `consul lock` (the Go client)', () => {
  const providers: LockProvider[] = [];
  const provider = (): LockProvider => {
    const created = createConsulProvider({ url: consul.url!.replace('consul://', 'http://'), prefix: PREFIX, lockDelayMs: 1000 });
    providers.push(created);
    return created;
  };
  afterEach(async () => {
    await stopAll(children);
    await Promise.all(providers.splice(0).map((p) => p.close()));
  });

  test('a Holdfast lock on <prefix>/.lock excludes a `consul lock` child until it is released', async () => {
    const name = `hf-first-${randomBytes(4).toString('hex')}`;
    const locks = provider();
    const held = await locks.tryAcquire(`${name}/.lock`, { reason: 'interop' });
    expect(held).not.toBeNull();

    // Try-once with a wait: the Go client must see our key as a lock (flags equal) held by another session.
    const tryOnce = consulLock(name, 'echo HELD', ['-timeout=1s']);
    const [code] = (await once(tryOnce.child, 'exit')) as [number | null];
    expect(code).not.toBe(0);

    const waiting = consulLock(name, 'echo HELD; exec sleep 30');
    expect(await printed(waiting.lines, 'HELD', 2000)).toBe(false);
    await held!.release();
    expect(await printed(waiting.lines, 'HELD', 10_000)).toBe(true);
    // Now the Go client holds it: Holdfast sees it busy, and inspect describes the foreign holder.
    expect(await locks.tryAcquire(`${name}/.lock`)).toBeNull();
    const info = await locks.inspect(`${name}/.lock`);
    expect(info?.details?.['holdfast']).toBe(false);
    expect(typeof info?.details?.['session']).toBe('string');
  });

  test('a running `consul lock` child excludes Holdfast; Holdfast is woken when it exits', async () => {
    const name = `go-first-${randomBytes(4).toString('hex')}`;
    const go = consulLock(name, 'echo HELD; sleep 3');
    // Listen before waiting: the Go client may exit before our acquire resolves.
    const exited = once(go.child, 'exit') as Promise<[number | null]>;
    expect(await printed(go.lines, 'HELD', 10_000)).toBe(true);
    const locks = provider();
    expect(await locks.tryAcquire(`${name}/.lock`)).toBeNull();
    const started = Date.now();
    const lock = await locks.acquire(`${name}/.lock`, { waitMs: 20_000 });
    const [code] = await exited;
    expect(code).toBe(0);
    // The child slept 3 s; the Go client released on its exit and a blocking query woke us.
    expect(Date.now() - started).toBeGreaterThan(1500);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await lock.isHeld()).toBe(true);
  });

  test('Holdfast waiters queue behind a `consul lock` holder and are served in turn once it exits', async () => {
    const name = `go-queue-${randomBytes(4).toString('hex')}`;
    const go = consulLock(name, 'echo HELD; sleep 2');
    const exited = once(go.child, 'exit') as Promise<[number | null]>;
    expect(await printed(go.lines, 'HELD', 10_000)).toBe(true);
    const http = consul.url!.replace('consul://', 'http://');
    const served: string[] = [];
    const waits = ['first', 'second'].map(async (who, i) => {
      if (i > 0) await until(async () => (await queueKeys(http, PREFIX, `${name}/.lock`)).length === 1, 5000, 'the first waiter queued');
      const lock = await provider().acquire(`${name}/.lock`, { waitMs: 20_000 });
      served.push(who);
      // The Go client's key protocol is untouched: it sees our grant as a lock held by another session.
      expect(await lock.isHeld()).toBe(true);
      await lock.release();
    });
    const [code] = await within(exited, 15_000, 'the `consul lock` child exits');
    expect(code).toBe(0);
    await within(Promise.all(waits), 15_000, 'both Holdfast waiters served');
    expect(served).toEqual(['first', 'second']);
    await until(async () => (await queueKeys(http, PREFIX, `${name}/.lock`)).length === 0, 2000, 'the queue empty');
  });

  test('a key used otherwise (other flags) is a conflict, not busy', async () => {
    const locks = provider();
    const key = `plain-${randomBytes(4).toString('hex')}`;
    const put = await fetch(`${consul.url!.replace('consul://', 'http://')}/v1/kv/${PREFIX}/${key}?flags=42`, { method: 'PUT', body: 'x' });
    expect(await put.json()).toBe(true);
    await expect(locks.tryAcquire(key)).rejects.toMatchObject({ code: 'HOLDFAST_CONFLICT' });
    await expect(locks.inspect(key)).rejects.toMatchObject({ code: 'HOLDFAST_CONFLICT' });
  });

  test('a waiting acquire of a key used otherwise is a conflict at once, not a wait (held by a session or not)', async () => {
    const locks = provider();
    const http = consul.url!.replace('consul://', 'http://');
    const base = `${http}/v1`;
    const session = (await (await fetch(`${base}/session/create`, { method: 'PUT', body: '{"TTL":"30s"}' })).json()) as { ID: string };
    for (const held of [false, true]) {
      const key = `plain-${randomBytes(4).toString('hex')}`;
      const put = await fetch(`${base}/kv/${PREFIX}/${key}?flags=42${held ? `&acquire=${session.ID}` : ''}`, { method: 'PUT', body: 'x' });
      expect(await put.json()).toBe(true);
      const started = Date.now();
      await expect(locks.acquire(key, { waitMs: 10_000 })).rejects.toMatchObject({ code: 'HOLDFAST_CONFLICT' });
      expect(Date.now() - started, `held ${held}: answered without waiting`).toBeLessThan(3000);
      await until(async () => (await queueKeys(http, PREFIX, key)).length === 0, 2000, 'nothing left in the queue');
    }
    await fetch(`${base}/session/destroy/${session.ID}`, { method: 'PUT' });
  });
});
