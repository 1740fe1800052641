import { createLockProvider, type LockProvider } from '@holdfast/core';
import { addressOf, FaultProxy, type HeldChunk } from '@holdfast/test-harness/faults';
import { until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { childrenOf, rawClient } from './raw-zookeeper.js';

// Curator's protected mode: a contender's znode carries its acquire's id in its name, so a node whose
// create reached the server but whose answer was lost with the connection is found again by the
// next attempt, instead of staying in line as an orphan that holds the lock for nobody.

const zookeeper = await useBackend('zookeeper');

/** Lets the contender's create request through, then cuts the connection before its answer comes back. */
async function passCreateThenCut(proxy: FaultProxy): Promise<HeldChunk> {
  for (;;) {
    const hold = proxy.holdClientChunk(1, 0);
    const chunk = await hold.engaged;
    if (!chunk.preview.includes('-lock-')) continue;
    await hold.released;
    // The request is on its way to the server; the reply needs a round trip, the cut is now.
    proxy.cut('silent');
    // The client reconnects on its next tick: that connection is forwarded (same session).
    proxy.restore();
    return chunk;
  }
}

describe.skipIf(!zookeeper.url)(`zookeeper lost create answers (${zookeeper.label})`, () => {
  const opened: LockProvider[] = [];
  const proxies: FaultProxy[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((p) => p.close()));
    await Promise.all(proxies.splice(0).map((p) => p.close()));
  });

  test('a waiting contender whose create answer is lost finds its node again: no orphan holds the key', async () => {
    const server = addressOf(zookeeper.url!);
    const proxy = await FaultProxy.start(server);
    proxies.push(proxy);
    // A session long enough to outlive the reconnect: the node it created stays.
    const a = await createLockProvider(`zookeeper://127.0.0.1:${proxy.address.port}/lost-create?sessionTimeout=10s`);
    const b = await createLockProvider(`zookeeper://${server.host}:${server.port}/lost-create?sessionTimeout=2s`);
    opened.push(a, b);
    await using raw = await rawClient(`${server.host}:${server.port}`);
    const line = (): Promise<string[]> => childrenOf(raw, '/lost-create/holdfast/k');

    const held = await within(b.acquire('k', { waitMs: 5000 }), 5000, 'the holder is granted');
    expect(await within(a.tryAcquire('k'), 5000, 'the contender connects'), 'a busy key was granted').toBeNull();
    const cut = passCreateThenCut(proxy);
    const waiting = a.acquire('k', { waitMs: 20_000 });
    const create = await within(cut, 10_000, "the contender's create request");
    expect(create.preview).toContain('_c_');
    // The create landed although its answer never came: the holder's node and the contender's.
    await until(async () => (await line()).length === 2, 5000, "the contender's node exists on the server");
    const nodeBeforeRetry = (await line()).sort()[1];

    await within(held.release(), 5000, 'the holder releases');
    const lock = await within(waiting, 10_000, 'the contender is granted with the node it created before the cut');
    expect(await line(), 'the contender holds with its first node, no second one').toEqual([nodeBeforeRetry]);
    expect(lock.token).toBeGreaterThan(held.token);
    await within(lock.release(), 5000, 'the contender releases');
    expect(await line(), 'a node was left behind').toEqual([]);
  });
});
