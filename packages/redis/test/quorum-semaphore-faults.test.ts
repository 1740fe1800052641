import { ErrorCode, type Lock, type LockProvider } from '@holdfast/core';
import { FaultProxy } from '@holdfast/test-harness/faults';
import { codeOf, within } from '@holdfast/test-harness/helpers';
import { afterEach, describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { threeNodes } from './fixture.js';
import { quorumUrl } from './quorum-url.js';

// Semaphore slots on a quorum of 3, each client reaching the nodes through proxies of its own, so
// that a node can be cut off from one client while the others still reach it. With a limit of 2 a
// slot must be held on every node (slot-quorum.ts): a majority would let three holders in, on
// {n1,n2}, {n2,n3} and {n1,n3}, each node counting only two.

const three = await threeNodes();

/** Long enough for a loaded machine's round trips, and for a cut node's commands to time out (commandTimeoutMs 1000). */
const CALL_MS = 5000;
const LIMIT = 2;

let keyCount = 0;
const newKey = (): string => `quorum-semaphore-faults/${process.pid}/${Date.now()}-${++keyCount}`;

interface Client {
  readonly locks: LockProvider;
  readonly proxies: readonly FaultProxy[];
}
const clients: Client[] = [];
afterEach(async () => {
  const closing = clients.splice(0);
  await Promise.allSettled(closing.map((client) => client.locks.close()));
  await Promise.allSettled(closing.flatMap((client) => client.proxies.map((proxy) => proxy.close())));
});

async function client(): Promise<Client> {
  const proxies = await Promise.all(three.map((node) => FaultProxy.start(addressOf(node.url))));
  const url = quorumUrl(proxies.map((proxy) => `redis://${proxy.address.host}:${proxy.address.port}`));
  const opened = { locks: createRedisProvider({ url, commandTimeoutMs: 1000 }), proxies };
  clients.push(opened);
  return opened;
}

function addressOf(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port) };
}

/** A slot, or null when refused (busy) or failed (too few nodes): either way nothing is held. */
async function trySlot(locks: LockProvider, key: string): Promise<Lock | null> {
  try {
    return await within(locks.semaphore(key, LIMIT).tryAcquire({ ttlMs: 30_000 }), CALL_MS, 'tryAcquire of a slot');
  } catch (error) {
    expect(codeOf(error), `a slot attempt with one node cut off failed with ${String(error)}`).toBe(ErrorCode.Backend);
    return null;
  }
}

describe.skipIf(three.length === 0)('semaphore slots on a quorum of 3 with a node cut off', { timeout: 60_000 }, () => {
  test('each client cut off from another node in turn: never more than the limit of holders, and slots again once healed', async () => {
    const key = newKey();
    const each = [await client(), await client(), await client()];
    // Connected everywhere first, so that a cut ends a live session, as a network fault does.
    for (const { locks } of each) expect(await within(locks.semaphore(key, LIMIT).holders(), CALL_MS, 'holders()')).toEqual([]);
    const held: Lock[] = [];
    // Client i loses node (i + 2) % 3: its slot could land on the other two, pairs {n1,n2}, {n2,n3}, {n1,n3}.
    for (const [i, { locks, proxies }] of each.entries()) {
      const cutOff = proxies[(i + 2) % 3]!;
      cutOff.cut('silent');
      const slot = await trySlot(locks, key);
      if (slot) held.push(slot);
      const standing = held.filter((lock) => !lock.signal.aborted);
      expect(standing.length, `${standing.length} slot holders of a semaphore of ${LIMIT}`).toBeLessThanOrEqual(LIMIT);
    }
    expect(held, 'a slot granted without every node of 3 (limit 2 needs all of them)').toEqual([]);
    for (const { proxies } of each) for (const proxy of proxies) proxy.restore();
    // Healed: the slots go to two clients again (the limit is reached), and no third.
    const healed = [await trySlotHealed(each[0]!.locks, key), await trySlotHealed(each[1]!.locks, key)];
    expect(healed.every(Boolean), 'no slot once every node was reachable again').toBe(true);
    expect(await trySlot(each[2]!.locks, key), 'a third slot of a semaphore of 2').toBeNull();
    await within(Promise.all(healed.map((slot) => slot!.release())), CALL_MS, 'release');
  });
});

describe.skipIf(three.length === 0)('read-write grants on a quorum of 3 with a node cut off', { timeout: 60_000 }, () => {
  test('a writer on {n1,n2} keeps out a reader asked of {n2,n3}: the node they share refuses it; readers on both pairs coexist', async () => {
    const key = newKey();
    const [writerSide, readerSide] = [await client(), await client()];
    for (const { locks } of [writerSide, readerSide])
      expect(await within(locks.readWrite(key).holders(), CALL_MS, 'holders()')).toEqual([]);
    writerSide.proxies[2]!.cut('silent');
    readerSide.proxies[0]!.cut('silent');
    const writer = await within(writerSide.locks.readWrite(key).tryWrite(), CALL_MS, 'a writer on n1 and n2');
    expect(writer, 'a free read-write lock refused a writer with a majority up').not.toBeNull();
    // Refused by n2, granted by n3, n1 never answers: no majority, retried after split votes, then busy.
    const reader = await within(readerSide.locks.readWrite(key).tryRead(), 3 * CALL_MS, 'a reader asked of n2 and n3');
    expect(reader, 'a reader granted by n3 alone while a writer held n1 and n2').toBeNull();
    await within(writer!.release(), CALL_MS, 'release of the writer');
    const readers = [
      await within(writerSide.locks.readWrite(key).tryRead(), CALL_MS, 'a reader on n1 and n2'),
      await within(readerSide.locks.readWrite(key).tryRead(), 3 * CALL_MS, 'a reader on n2 and n3'),
    ];
    expect(readers.every(Boolean), 'readers on two majorities did not coexist').toBe(true);
    await within(Promise.all(readers.map((held) => held!.release())), CALL_MS, 'release of the readers');
  });
});

/** Once restored, the client reconnects past its silent connections: a waiting acquire rides that out. */
function trySlotHealed(locks: LockProvider, key: string): Promise<Lock> {
  return within(locks.semaphore(key, LIMIT).acquire({ ttlMs: 30_000, waitMs: CALL_MS }), 2 * CALL_MS, 'a slot once healed');
}
