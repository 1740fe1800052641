import type { LockInfo } from '@holdfast/core';
import type { CallContext } from '@holdfast/core/backend';
import type { Redis } from 'ioredis';
import { isCluster, primariesOf } from './cluster-connection.js';
import { type InspectReply, type InspectScriptReply, inspectionOf, inspectReplyOf } from './inspection.js';
import type { KeyNames } from './key-names.js';
import type { NodeSet } from './node-set.js';
import { INSPECT } from './scripts.js';

/** Keys per SCAN step and per pipelined batch of INSPECT scripts. */
const BATCH = 1000;

/**
 * Every held lock whose key starts with `prefix`: each node's lock keys under the namespace are
 * found with SCAN, then read with the INSPECT script, and a lock is listed when a majority of
 * nodes holds the same value, as inspect() decides. Without a namespace (prefix '', redlock
 * interop) any string key could be a foreign lock or the application's own data, so only locks
 * Holdfast's holder record vouches for are listed.
 */
export async function listLocks(nodes: NodeSet, names: KeyNames, prefix: string, call: CallContext): Promise<LockInfo[]> {
  const scans = await nodes.ask(call, 'list', (client) => scan(client, names.scanPattern(prefix), call.signal));
  if (scans.tooManyFailed) throw scans.failure('list');
  const candidates = new Set<string>();
  for (const found of scans.answers) {
    for (const redisKey of found) {
      const key = names.keyOf(redisKey);
      if (key?.startsWith(prefix)) candidates.add(key);
    }
  }
  const keys = [...candidates].sort();
  if (keys.length === 0) return [];
  const reads = await nodes.ask(call, 'list', (client) => inspectAll(client, names, keys));
  if (reads.tooManyFailed) throw reads.failure('list');
  const listed: LockInfo[] = [];
  keys.forEach((key, i) => {
    const info = inspectionOf(
      key,
      reads.answers.map((replies) => replies[i] ?? null),
      nodes.quorum,
      nodes.size,
    );
    if (info && (names.prefix !== '' || info.details?.['holdfast'] === true)) listed.push(info);
  });
  return listed;
}

/** SCAN of the server, or of every primary of a Cluster (each holds only its own slots' keys). */
async function scan(client: Redis, pattern: string, signal: AbortSignal): Promise<string[]> {
  const found: string[] = [];
  for (const server of primariesOf(client)) {
    let cursor = '0';
    do {
      if (signal.aborted) throw signal.reason;
      const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', BATCH);
      cursor = next;
      found.push(...keys);
    } while (cursor !== '0');
  }
  return found;
}

/** INSPECT of every key, pipelined in batches; a key that is not a string (a semaphore, data) reads as null. */
async function inspectAll(client: Redis, names: KeyNames, keys: readonly string[]): Promise<(InspectReply | null)[]> {
  // A Cluster's pipeline must stay in one slot: each key is read on its own, routed by the Cluster.
  if (isCluster(client)) return inspectEach(client, names, keys);
  await INSPECT.load(client);
  const replies: (InspectReply | null)[] = [];
  for (let start = 0; start < keys.length; start += BATCH) {
    const pipeline = client.pipeline();
    for (const key of keys.slice(start, start + BATCH)) {
      const { lock, holder, fence } = names.of(key);
      INSPECT.queue(pipeline, [lock, holder, fence], []);
    }
    const results = (await pipeline.exec()) ?? [];
    for (const [error, reply] of results) {
      if (error) throw error;
      replies.push(inspectReplyOf(reply as InspectScriptReply | null));
    }
  }
  return replies;
}

async function inspectEach(client: Redis, names: KeyNames, keys: readonly string[]): Promise<(InspectReply | null)[]> {
  const replies: (InspectReply | null)[] = [];
  for (let start = 0; start < keys.length; start += BATCH) {
    const batch = keys.slice(start, start + BATCH).map((key) => {
      const { lock, holder, fence } = names.of(key);
      return (INSPECT.run(client, [lock, holder, fence], []) as Promise<InspectScriptReply | null>).then(inspectReplyOf);
    });
    replies.push(...(await Promise.all(batch)));
  }
  return replies;
}
