import { setTimeout as delay } from 'node:timers/promises';
import type { Lock, LockProvider } from '@holdfast/core';
import { FaultProxy } from '@holdfast/test-harness/faults';
import { codeOf, until, within } from '@holdfast/test-harness/helpers';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { threeNodes } from './fixture.js';
import { quorumUrl } from './quorum-url.js';

// A quorum's release answers once a majority of nodes did: the last node may still hold the old
// use of the key when another client asks for it. That node's answer must not decide: a plain lock
// or a semaphore is only in use where a majority holds it. Client A reaches node 3 through a proxy
// that is paused, so A's release stays on its way there while B asks.

const three = await threeNodes();
/** Reads node 3 directly: the grant must be there before its release is held back. */
const node3 = three.length > 0 ? new Redis(three[2]!.url) : undefined;
afterAll(() => node3?.disconnect());

/** Long enough for a loaded machine's round trips. */
const CALL_MS = 5000;
const TTL_MS = 30_000;
/** How late a slow node answers: far longer than a loopback round trip to the others. */
const SLOW_NODE_MS = 300;

let keyCount = 0;
const newKey = (): string => `quorum-lagging-release/${process.pid}/${Date.now()}-${++keyCount}`;

const opened: LockProvider[] = [];
const proxies: FaultProxy[] = [];
afterEach(async () => {
  for (const proxy of proxies) proxy.resume();
  await Promise.allSettled(opened.splice(0).map((locks) => locks.close()));
  await Promise.allSettled(proxies.splice(0).map((proxy) => proxy.close()));
});

/** A provider on the three nodes, node `index` through a proxy of its own (returned), the others directly. */
async function throughProxyTo(index: number): Promise<{ locks: LockProvider; proxy: FaultProxy }> {
  const node = new URL(three[index]!.url);
  const proxy = await FaultProxy.start({ host: node.hostname, port: Number(node.port) });
  proxies.push(proxy);
  const url = quorumUrl(three.map((each, i) => (i === index ? `redis://${proxy.address.host}:${proxy.address.port}` : each.url)));
  const locks = createRedisProvider({ url });
  opened.push(locks);
  return { locks, proxy };
}

function direct(): LockProvider {
  const locks = createRedisProvider({ url: quorumUrl(three.map((node) => node.url)) });
  opened.push(locks);
  return locks;
}

/**
 * Node 3's copy of `held` outlives its release: A's release reaches nodes 1 and 2 only, for now.
 * The grant answered at a majority too, so node 3 is first waited for until it holds the key.
 */
async function releasedOnMajorityOnly(key: string, held: Lock, toNode3: FaultProxy): Promise<void> {
  await until(async () => (await node3!.keys(`*${key}*`)).length > 0, CALL_MS, 'the grant reached node 3');
  toNode3.pause();
  await within(held.release(), CALL_MS, 'release at a majority while node 3 waits');
}

describe.skipIf(three.length === 0)('a release still on its way to one node of a quorum of 3', { timeout: 60_000 }, () => {
  test('a plain lock is granted by the majority that released a semaphore slot, not refused as a conflict', async () => {
    const key = newKey();
    const a = await throughProxyTo(2);
    const slot = await within(a.locks.semaphore(key, 1).tryAcquire({ ttlMs: TTL_MS }), CALL_MS, 'tryAcquire of a slot');
    expect(slot, 'a slot of a free key').not.toBeNull();
    await releasedOnMajorityOnly(key, slot!, a.proxy);

    // B reaches node 1 late, so that node 3's answer comes before the majority's, and must not decide.
    const b = await throughProxyTo(0);
    b.proxy.pause();
    const taking = b.locks.tryAcquire(key, { ttlMs: TTL_MS }).catch((error: unknown) => error);
    await delay(SLOW_NODE_MS);
    b.proxy.resume();
    const lock = await within(taking, CALL_MS, 'tryAcquire of the plain lock');
    expect(lock instanceof Error ? `${codeOf(lock)}: ${lock.message}` : 'no error', "node 3's lagging slot decided").toBe('no error');
    expect(lock, 'the majority that released the slot did not grant the plain lock').not.toBeNull();
    await within((lock as Lock).release(), CALL_MS, 'release');
  });

  test('a semaphore that needs every node is busy, not a conflict, while a released lock lingers on one; granted once the release lands', async () => {
    const key = newKey();
    const a = await throughProxyTo(2);
    const lock = await within(a.locks.tryAcquire(key, { ttlMs: TTL_MS }), CALL_MS, 'tryAcquire of the plain lock');
    expect(lock, 'a free key').not.toBeNull();
    await releasedOnMajorityOnly(key, lock!, a.proxy);

    // A limit of 5 on 3 nodes needs all of them (slot-quorum.ts): node 3 still says "a plain lock".
    const b = direct();
    const meanwhile = await within(b.semaphore(key, 5).tryAcquire({ ttlMs: TTL_MS }), CALL_MS, 'tryAcquire of a slot').catch(
      (error: unknown) => error,
    );
    expect(meanwhile instanceof Error ? `${codeOf(meanwhile)}: ${meanwhile.message}` : 'no error', "node 3's lagging lock decided").toBe(
      'no error',
    );
    expect(meanwhile, 'a slot granted without every node').toBeNull();

    a.proxy.resume();
    const slot = await within(
      b.semaphore(key, 5).acquire({ ttlMs: TTL_MS, waitMs: CALL_MS }),
      CALL_MS * 2,
      'acquire of a slot once the release reached node 3',
    );
    expect(slot.token, 'a slot without a token').toBeGreaterThan(0n);
    await within(slot.release(), CALL_MS, 'release');
  });
});
