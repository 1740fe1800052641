import { randomUUID } from 'node:crypto';
import { createLockProvider, ErrorCode, type LockProvider } from '@holdfast/core';
import { type BackendGrant, busy, type LockMode, type ModeRequest, type QueuePlace } from '@holdfast/core/backend';
import { codeOf, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import zookeeper from 'node-zookeeper-client';
import { afterEach, describe, expect, test } from 'vitest';
import { ZookeeperBackend } from '../src/backend.js';
import type { ZkWake } from '../src/contend.js';
import { resolveOptions } from '../src/options.js';
import { childrenOf, rawClient } from './raw-zookeeper.js';

// Curator's InterProcessReadWriteLock as Holdfast lays it out: `__READ__` / `__WRIT__` ephemeral
// sequential znodes under the key's znode, one FIFO line, and a waiter that watches one node.

const server = await useBackend('zookeeper');
const CHROOT = '/rw-protocol';
/** One call's bound on a loaded machine (a round trip or two to a local server). */
const CALL_MS = 5000;
/** A waiter's wait: long enough that only an event ends it within a test. */
const WAIT_MS = 60_000;

const call = () => ({ signal: AbortSignal.timeout(CALL_MS) });

function modeRequest(key: string, mode: LockMode, place?: QueuePlace): ModeRequest {
  return {
    key,
    mode,
    lockId: randomUUID(),
    owner: 'protocol test',
    reason: undefined,
    ttlMs: 30_000,
    autoRenew: true,
    onLost: () => undefined,
    ...(place ? { place } : {}),
  };
}

const placeOf = (): QueuePlace => ({ id: randomUUID(), until: Date.now() + WAIT_MS });

/** Curator's client would create this for `new InterProcessReadWriteLock(client, dir).writeLock()` (protected mode). */
function curatorNode(raw: zookeeper.Client, dir: string, lockName: '__READ__' | '__WRIT__'): Promise<string> {
  return new Promise((resolve, reject) => {
    raw.mkdirp(dir, (mkdirError) => {
      if (mkdirError) return reject(mkdirError);
      raw.create(`${dir}/_c_${randomUUID()}-${lockName}`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, (error, path) =>
        error ? reject(error) : resolve(path),
      );
    });
  });
}

function removeNode(raw: zookeeper.Client, path: string): Promise<void> {
  return new Promise((resolve, reject) => raw.remove(path, -1, (error) => (error ? reject(error) : resolve())));
}

/** A key's contender names in line order (by their 10-digit sequence). */
async function lineOf(client: zookeeper.Client, dir: string): Promise<string[]> {
  return (await childrenOf(client, dir)).sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)));
}

describe.skipIf(!server.url)(`zookeeper read-write locks (${server.label})`, () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const backend = (): ZookeeperBackend => {
    const made = new ZookeeperBackend(resolveOptions({ url: `${server.url}${CHROOT}` }));
    cleanups.push(() => made.close(call()));
    return made;
  };
  const provider = async (): Promise<LockProvider> => {
    const made = await createLockProvider(`${server.url}${CHROOT}`);
    cleanups.push(() => made.close());
    return made;
  };
  const raw = async (): Promise<zookeeper.Client> => {
    const client = await rawClient(server.url!.replace(/^zookeeper:\/\//, ''));
    cleanups.push(async () => client.close());
    return client;
  };
  const dirOf = (key: string): string => `${CHROOT}/holdfast/${key}`;

  test("nodes carry Curator's names, in one line: a reader after a waiting writer waits, a single attempt leaves no node", async () => {
    const zk = backend();
    const client = await raw();
    const key = `layout-${randomUUID()}`;
    const reader = await zk.tryGrantMode(modeRequest(key, 'shared'), call());
    expect(reader.granted, 'a free key refused a reader').toBe(true);
    const writerPlace = placeOf();
    expect((await zk.tryGrantMode(modeRequest(key, 'exclusive', writerPlace), call())).granted, 'a writer beside a reader').toBe(false);
    const line = await lineOf(client, dirOf(key));
    expect(line).toHaveLength(2);
    expect(line[0]).toMatch(/^_c_.+-__READ__\d{10}$/);
    expect(line[1]).toMatch(new RegExp(`^_c_${writerPlace.id}-__WRIT__\\d{10}$`));
    // Writer-preferred: a reader that comes after the waiting writer is refused, and leaves nothing.
    expect((await zk.tryGrantMode(modeRequest(key, 'shared'), call())).granted, 'a reader overtook a waiting writer').toBe(false);
    expect(await childrenOf(client, dirOf(key)), 'a single attempt left its node').toHaveLength(2);
    const holders = await zk.modeHolders(key, call());
    expect(holders.map((h) => h.details?.['mode'])).toEqual(['shared']);
    await zk.leaveQueue(key, writerPlace, call());
    if (reader.granted) await reader.grant.release(call());
    expect(await childrenOf(client, dirOf(key)), 'nodes left after release').toEqual([]);
  });

  test("Curator's writer node and Holdfast's readers exclude each other; a plain lock of the key is a conflict", async () => {
    const locks = await provider();
    const client = await raw();
    const key = `curator-${randomUUID()}`;
    const rw = locks.readWrite(key);
    const curatorWriter = await curatorNode(client, dirOf(key), '__WRIT__');
    expect(await within(rw.tryRead(), CALL_MS, 'tryRead answers'), "a reader got in beside Curator's writer").toBeNull();
    const holders = await within(rw.holders(), CALL_MS, 'holders() answers');
    expect(holders.map((h) => [h.details?.['znode'], h.details?.['mode']])).toEqual([[curatorWriter, 'exclusive']]);
    const reading = rw.read({ waitMs: WAIT_MS });
    reading.catch(() => undefined);
    await removeNode(client, curatorWriter);
    const reader = await within(reading, CALL_MS, "the reader is granted once Curator's writer left");
    // Curator's writer that comes now is not first in line: by Curator's rule it waits, and so does ours.
    const laterWriter = await curatorNode(client, dirOf(key), '__WRIT__');
    expect(await within(rw.tryWrite(), CALL_MS, 'tryWrite answers'), 'a writer got in beside a reader').toBeNull();
    expect(codeOf(await locks.tryAcquire(key).catch((error: unknown) => error)), 'a plain lock of a read-write key').toBe(
      ErrorCode.Conflict,
    );
    await removeNode(client, laterWriter);
    await within(reader.release(), CALL_MS, 'release answers');
  });

  test("a reader waits on the last writer before it, a writer on the node just before it; only that node's deletion wakes them", async () => {
    const zk = backend();
    const client = await raw();
    const key = `watch-${randomUUID()}`;
    const dir = dirOf(key);
    const first = await zk.tryGrantMode(modeRequest(key, 'exclusive'), call());
    expect(first.granted, 'a free key refused a writer').toBe(true);
    const holder = (first as { grant: BackendGrant }).grant as BackendGrant & { path: string };
    const readerPlace = placeOf();
    const reader = await zk.tryGrantMode(modeRequest(key, 'shared', readerPlace), call());
    const writerPlace = placeOf();
    const writer = await zk.tryGrantMode(modeRequest(key, 'exclusive', writerPlace), call());
    const laterPlace = placeOf();
    const later = await zk.tryGrantMode(modeRequest(key, 'shared', laterPlace), call());
    const line = await lineOf(client, dir);
    const wakeOf = (outcome: typeof reader): ZkWake | undefined => (outcome.granted ? undefined : outcome.wake);
    expect(wakeOf(reader)?.predecessor, 'the reader watches the writer before it').toBe(holder.path);
    expect(wakeOf(writer)?.predecessor, 'the writer watches the node just before it (a reader)').toBe(`${dir}/${line[1]}`);
    expect(wakeOf(later)?.predecessor, 'a reader watches the last writer before it').toBe(`${dir}/${line[2]}`);

    let readerWoken = false;
    const readerWait = zk
      .waitForChange(key, reader as never, { signal: AbortSignal.timeout(WAIT_MS), timeoutMs: WAIT_MS, place: readerPlace })
      .then(() => (readerWoken = true));
    // An observer of the key's children, on the same session: its wake proves the session heard the changes below.
    const observed = zk.waitForChange(key, busy<ZkWake>(), { signal: AbortSignal.timeout(WAIT_MS), timeoutMs: WAIT_MS });
    await zk.leaveQueue(key, laterPlace, call());
    await zk.leaveQueue(key, writerPlace, call());
    await within(observed, CALL_MS, 'the observer hears the line change');
    await new Promise((resolve) => setImmediate(resolve));
    expect(readerWoken, "the reader was woken by nodes that are not the writer's before it").toBe(false);
    await holder.release(call());
    await within(readerWait, CALL_MS, "the reader is woken by the writer's deletion");
    const granted = await zk.tryGrantMode(modeRequest(key, 'shared', readerPlace), call());
    expect(granted.granted, 'the reader holds once the writer before it left').toBe(true);
    if (granted.granted) await granted.grant.release(call());
  });
});
