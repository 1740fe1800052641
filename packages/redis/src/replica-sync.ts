import { BackendError } from '@holdfast/core';
import type { CallContext } from '@holdfast/core/backend';
import type { Redis } from 'ioredis';
import { isCluster } from './cluster-connection.js';
import { untilAborted } from './until-aborted.js';

/** `replicas` / `replicaTimeoutMs`: how many replicas must hold a grant or renewal before it counts. */
export interface ReplicaSync {
  readonly replicas: number;
  readonly timeoutMs: number;
}

/**
 * WAIT on the connection the write went on: the number of replicas that acknowledged every write
 * sent on it so far. On a Cluster the WAIT must reach the primary of the key's slot, so it rides in
 * a pipeline behind a read of the key (ioredis routes a pipeline by its keys).
 */
async function acknowledged(client: Redis, key: string, sync: ReplicaSync): Promise<number> {
  if (!isCluster(client)) return Number(await client.call('WAIT', sync.replicas, sync.timeoutMs));
  const results = (await client.pipeline().pttl(key).call('WAIT', sync.replicas, sync.timeoutMs).exec()) ?? [];
  const [error, count] = results[1] ?? [new Error('no answer to WAIT')];
  if (error) throw error;
  return Number(count);
}

/**
 * Resolves once `sync.replicas` replicas hold what was written on `client` for `key`; a BackendError
 * otherwise (too few within the bound, or WAIT failed). The caller undoes or does not count the write:
 * a primary that dies now could be replaced by a replica that never saw it.
 */
export async function confirmReplicated(
  client: Redis,
  key: string,
  sync: ReplicaSync,
  call: CallContext,
  operation: string,
): Promise<void> {
  let count: number;
  try {
    count = await untilAborted(acknowledged(client, key, sync), call, operation);
  } catch (error) {
    if (error instanceof BackendError) throw error;
    throw new BackendError('redis', `${operation}: WAIT for ${sync.replicas} replica(s) failed: ${(error as Error).message}`, error);
  }
  if (count < sync.replicas) {
    throw new BackendError(
      'redis',
      `${operation}: only ${count} of ${sync.replicas} replica(s) acknowledged within ${sync.timeoutMs} ms (replicas option); not counted`,
    );
  }
}
