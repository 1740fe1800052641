import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { LockProvider } from '@holdfast/core';
import { within } from '@holdfast/test-harness/helpers';
import { etcdctlBinary } from '@holdfast/test-harness/servers';
import { needLocalBinary, useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createEtcdProvider } from '../src/index.js';
import { etcdctlLock, heldKey, stop, stopAll } from './etcdctl.js';

// Holdfast key "<k>" of prefix P is etcd's Mutex "P/<k>": both put their contenders in "P/<k>/".
const etcd = await useBackend('etcd');
const noEtcdctl = await needLocalBinary('etcdctl');
const binary = await etcdctlBinary();
const PREFIX = 'holdfast-interop';
const children: ChildProcess[] = [];

describe.skipIf(!etcd.url || noEtcdctl !== null)("interoperability with `etcdctl lock` (etcd's own Mutex)", () => {
  const endpoint = etcd.url?.replace('etcd://', '') ?? '';
  const providers: LockProvider[] = [];
  const provider = (): LockProvider => {
    const created = createEtcdProvider({ endpoints: [endpoint], prefix: PREFIX });
    providers.push(created);
    return created;
  };
  afterEach(async () => {
    await stopAll(children);
    await Promise.all(providers.splice(0).map((p) => p.close()));
  });

  test('a lock held by Holdfast is held for etcdctl: it waits, and takes the lock once Holdfast releases', async () => {
    const key = `hf-first-${randomBytes(4).toString('hex')}`;
    const locks = provider();
    const held = await within(locks.tryAcquire(key, { reason: 'interop' }), 5000, 'tryAcquire');
    expect(held).not.toBeNull();

    const etcdctl = etcdctlLock(binary!, endpoint, `${PREFIX}/${key}`, children);
    expect(await heldKey(etcdctl, `${PREFIX}/${key}`, 1500), 'etcdctl took a lock Holdfast holds').toBeNull();
    expect((await within(locks.inspect(key), 5000, 'inspect'))?.token).toBe(held!.token);

    await within(held!.release(), 5000, 'release');
    const etcdctlKey = await heldKey(etcdctl, `${PREFIX}/${key}`, 5000);
    expect(etcdctlKey, 'etcdctl did not take the lock Holdfast released').not.toBeNull();

    // Now etcdctl holds it: Holdfast sees its entry as the holder and cannot take the key.
    const other = provider();
    expect(await within(other.tryAcquire(key), 5000, 'tryAcquire'), 'Holdfast took a lock etcdctl holds').toBeNull();
    const holder = await within(other.inspect(key), 5000, 'inspect');
    expect(holder?.details?.['etcdKey']).toBe(etcdctlKey);
    expect(holder!.token > held!.token, "etcdctl's create revision is above the earlier holder's token").toBe(true);
  });

  test('a lock held by etcdctl is held for Holdfast: acquire waits, and wins once etcdctl unlocks', async () => {
    const key = `etcdctl-first-${randomBytes(4).toString('hex')}`;
    const etcdctl = etcdctlLock(binary!, endpoint, `${PREFIX}/${key}`, children);
    const etcdctlKey = await heldKey(etcdctl, `${PREFIX}/${key}`, 5000);
    expect(etcdctlKey).not.toBeNull();

    const locks = provider();
    expect(await within(locks.tryAcquire(key), 5000, 'tryAcquire'), 'Holdfast took a lock etcdctl holds').toBeNull();
    const holder = await within(locks.inspect(key), 5000, 'inspect');
    expect(holder?.details?.['etcdKey']).toBe(etcdctlKey);
    expect(holder?.owner).toMatch(/^etcd lease [0-9a-f]+$/);

    const waiting = locks.acquire(key, { waitMs: 10_000 });
    let granted = false;
    void waiting.then(
      () => (granted = true),
      () => undefined,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(granted, 'Holdfast was granted while etcdctl held the lock').toBe(false);

    const stoppedAt = performance.now();
    // etcdctl deletes its key on SIGTERM (Unlock), so the waiter's predecessor watch fires.
    expect(await stop(etcdctl)).toBe(0);
    const lock = await within(waiting, 5000, 'the Holdfast waiter after etcdctl unlocked');
    expect(performance.now() - stoppedAt).toBeLessThan(3000);
    expect(lock.token > holder!.token, "the waiter's token is above etcdctl's create revision").toBe(true);
    await within(lock.release(), 5000, 'release');
  });
});
