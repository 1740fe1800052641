import { setMaxListeners } from 'node:events';
import type { LockInfo } from '@holdfast/core';
import { linkedController } from '@holdfast/core/backend';
import { decodeData, holdersOf, readLine } from './line.js';
import { type Contender, type ContenderKind, isReadWriteKind, keyOfNode, LOCK_KIND, READ_KIND } from './node-names.js';
import type { ZkSpace } from './space.js';
import { ctimeOf, czxidOf } from './zk-calls.js';

/**
 * Runs `work` with one signal that many parallel calls may share (each call listens to it until it
 * settles): a listing of hundreds of keys would otherwise trip Node's listener-leak warning on the caller's signal.
 */
async function fanOut<T>(signal: AbortSignal, work: (shared: AbortSignal) => Promise<T>): Promise<T> {
  const { controller, dispose } = linkedController(signal);
  setMaxListeners(0, controller.signal);
  try {
    return await work(controller.signal);
  } finally {
    dispose();
  }
}

/** One holder as LockInfo, read from its znode; null when it went meanwhile. */
async function infoOf(space: ZkSpace, key: string, dir: string, holder: Contender, signal: AbortSignal): Promise<LockInfo | null> {
  const path = `${dir}/${holder.name}`;
  const node = await space.calls.data(path, signal);
  if (node === null) return null;
  const data = decodeData(node.data);
  const session = (node.stat.ephemeralOwner as unknown as Buffer).toString('hex');
  return {
    key,
    owner: data?.owner ?? `zookeeper session 0x${session}`,
    reason: data?.reason,
    acquiredAt: ctimeOf(node.stat),
    expiresAt: null,
    token: czxidOf(node.stat),
    details: {
      znode: path,
      session: `0x${session}`,
      sequence: holder.sequence,
      ...(isReadWriteKind(holder.kind) ? { mode: holder.kind === READ_KIND ? 'shared' : 'exclusive' } : {}),
    },
  };
}

/** What a kind of holders is: a plain lock's, a semaphore's slots, a read-write lock's. */
export type HolderUse = 'lock' | 'slots' | 'read-write';

function useOf(kind: ContenderKind): HolderUse {
  return kind === LOCK_KIND ? 'lock' : isReadWriteKind(kind) ? 'read-write' : 'slots';
}

/** The holders of a key in use as `use` (none while it is used otherwise), oldest first. */
export async function holdersInfo(space: ZkSpace, key: string, use: HolderUse, signal: AbortSignal): Promise<LockInfo[]> {
  const dir = space.keyPath(key);
  const holders = holdersOf(await readLine(space.calls, dir, signal)).filter((c) => useOf(c.kind) === use);
  const infos = await fanOut(signal, (shared) => Promise.all(holders.map((h) => infoOf(space, key, dir, h, shared))));
  return infos.filter((i): i is LockInfo => i !== null);
}

export async function inspectKey(space: ZkSpace, key: string, signal: AbortSignal): Promise<LockInfo | null> {
  return (await holdersInfo(space, key, 'lock', signal))[0] ?? null;
}

/** Every lock whose key starts with `prefix`: one getChildren of the root, then the matching keys' holders. */
export async function listLocks(space: ZkSpace, prefix: string, signal: AbortSignal): Promise<LockInfo[]> {
  const names = (await space.calls.children(space.root, signal)) ?? [];
  const keys = names
    .map(keyOfNode)
    .filter((k): k is string => typeof k === 'string' && k.startsWith(prefix))
    .sort();
  const found = await fanOut(signal, (shared) => Promise.all(keys.map((key) => inspectKey(space, key, shared))));
  return found.filter((i): i is LockInfo => i !== null);
}

/** Deletes the key's holder (or its semaphore's or read-write lock's holders); the holders hear it through their node watch. */
export async function forceRelease(space: ZkSpace, key: string, signal: AbortSignal): Promise<boolean> {
  const dir = space.keyPath(key);
  const holders = holdersOf(await readLine(space.calls, dir, signal));
  const removed = await fanOut(signal, (shared) => Promise.all(holders.map((h) => space.calls.remove(`${dir}/${h.name}`, -1, shared))));
  return removed.some(Boolean);
}
