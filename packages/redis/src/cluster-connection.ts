import { Cluster, type Redis, type RedisOptions } from 'ioredis';
import type { NodeSettings } from './connections.js';
import type { HostPort } from './topology-url.js';

/**
 * An ioredis Cluster with the fail-fast settings of failFastClient where a Cluster allows them: no resending
 * of commands in flight on a connection that dropped, bounded connect and command times. Redirects
 * (MOVED, ASK) are followed at once; TRYAGAIN (a multi-key script during a slot migration) and
 * CLUSTERDOWN (a failover under way) are retried every 100 ms, 16 times at most, and the caller's
 * deadline bounds the wait for them in any case; what persists reaches the caller as a BackendError.
 * Typed as a Redis: the commands Holdfast sends exist on both, with the same signatures.
 */
export function failFastCluster(seeds: readonly HostPort[], base: RedisOptions, settings: NodeSettings, commandTimeoutMs: number): Redis {
  const { db: _ignored, ...rest } = base;
  const cluster = new Cluster(
    seeds.map((seed) => ({ ...seed })),
    {
      lazyConnect: true,
      // The Cluster connects to a node at its first command: without the queue, commands that meet
      // the connection still opening fail ("Connection is closed"). Holdfast sends nothing before the
      // Cluster is ready, and a grant that reached a node late is undone like any failed grant.
      enableOfflineQueue: true,
      scaleReads: 'master',
      maxRedirections: 16,
      retryDelayOnMoved: 0,
      // A connection closed under a command: not resent (the command may have run), the caller decides.
      retryDelayOnFailover: 0,
      retryDelayOnClusterDown: 100,
      retryDelayOnTryAgain: 100,
      slotsRefreshTimeout: settings.connectTimeoutMs,
      clusterRetryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
      // Not retryStrategy or enableOfflineQueue: the Cluster manages its node connections with those.
      redisOptions: {
        connectTimeout: settings.connectTimeoutMs,
        ...rest,
        maxRetriesPerRequest: 0,
        autoResendUnfulfilledCommands: false,
        autoResubscribe: false,
        ...(commandTimeoutMs ? { commandTimeout: commandTimeoutMs } : {}),
        ...({ disconnectTimeout: 100 } as RedisOptions),
      },
    },
  );
  return cluster as unknown as Redis;
}

export function isCluster(client: Redis): boolean {
  return (client as { isCluster?: boolean }).isCluster === true;
}

/** The primaries' connections of a Cluster (each serves its own slots), or the client itself. */
export function primariesOf(client: Redis): Redis[] {
  return isCluster(client) ? (client as unknown as Cluster).nodes('master') : [client];
}

/**
 * After a command to a Cluster node timed out or lost its connection: asks for the slot map now.
 * ioredis learns a failover only from a redirect, and a primary that is cut off or hung never sends
 * one (it has no periodic refresh by default), so without this every command for its slots would go
 * on timing out against it until it came back, while its promoted replica served them. One refresh
 * at a time (ioredis joins concurrent calls); a server's own error reply is no reason to refresh.
 */
export function refreshAfterFailure(client: Redis, error: unknown): void {
  if (!isCluster(client) || (error as Error | undefined)?.name === 'ReplyError') return;
  (client as unknown as Cluster).refreshSlotsCache();
}

const keyOf = (node: Redis): string => `${node.options.host}:${node.options.port}`;

/**
 * Calls `failedOver` when a node that was a primary leaves the Cluster's connections (killed,
 * unreachable) or is a replica at the next slot refresh (demoted by a failover): a grant it made
 * may not have reached the replica that serves its slots now. Only the topology is compared, never
 * timing: a slot migration moves the keys with their expiry and keeps the node a primary.
 */
export function watchFailovers(client: Redis, failedOver: (detail: string) => void): void {
  if (!isCluster(client)) return;
  const cluster = client as unknown as Cluster;
  let primaries = new Set<string>();
  const compare = (): void => {
    const now = new Set(cluster.nodes('master').map(keyOf));
    const lost = [...primaries].filter((key) => !now.has(key));
    primaries = now;
    if (lost.length > 0) failedOver(`Redis Cluster primary ${lost.join(', ')} failed or was demoted: grants it made may be lost`);
  };
  cluster.on('ready', compare);
  cluster.on('refresh', compare);
  cluster.on('-node', (node: Redis) => {
    if (!primaries.has(keyOf(node))) return;
    primaries.delete(keyOf(node));
    failedOver(`the connection to Redis Cluster primary ${keyOf(node)} ended: grants it made may be lost`);
  });
}
