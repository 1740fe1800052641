import type { CreateLockProviderOptions, LockProvider } from '@holdfast/core';
import { InvalidArgumentError } from '@holdfast/core';
import { clampToTimerRange, createProvider, providerOptions } from '@holdfast/core/backend';
import type { Redis, RedisOptions } from 'ioredis';
import { isCluster } from './cluster-connection.js';
import { DEFAULT_PREFIX, KeyNames } from './key-names.js';
import { NodeSet } from './node-set.js';
import { adapterOptions, checkOptions, type RedisProviderOptions } from './options.js';
import { QuorumBackend } from './quorum-backend.js';
import { RedisNode } from './redis-node.js';
import { SingleNodeBackend } from './single-node-backend.js';
import { isTopologyUrl, parseTopologyUrl, type Topology } from './topology-url.js';
import { parseRedisUrl } from './url.js';

export { QUORUM_CAPABILITIES, SINGLE_NODE_CAPABILITIES } from './capabilities.js';
export { FOREIGN_OWNER } from './inspection.js';
export { DEFAULT_PREFIX } from './key-names.js';
export type { RedisProviderOptions } from './options.js';

/** A Redis-backed LockProvider: one server (strict fencing) or a Redlock quorum (fencing 'none'). */
export function createRedisProvider(options: RedisProviderOptions): LockProvider {
  checkOptions(options);
  const common = providerOptions(options);
  const topologyUrl = options.url !== undefined && isTopologyUrl(String(options.url)) ? parseTopologyUrl(String(options.url)) : undefined;
  const topology: Topology | undefined = topologyUrl?.topology;
  const parsed = options.url === undefined ? undefined : (topologyUrl ?? parseRedisUrl(options.url));
  if (options.url !== undefined && options.nodes !== undefined)
    throw new InvalidArgumentError('options', 'give a Redis url or nodes, not both');
  // A Cluster has the commands Holdfast sends, with the same signatures: it is handled as a Redis.
  const appsOwn = options.client as Redis | undefined;
  const nodeOptions =
    options.nodes ??
    (topology
      ? [topology.kind === 'cluster' ? topology.shared : topology.node]
      : ((parsed as ReturnType<typeof parseRedisUrl> | undefined)?.nodes ?? (appsOwn ? [appsOwnOptions(appsOwn)] : undefined)));
  if (!nodeOptions || nodeOptions.length === 0) throw new InvalidArgumentError('options', 'give a Redis url, nodes or client');
  const onCluster = topology?.kind === 'cluster' || (appsOwn !== undefined && isCluster(appsOwn));
  if (options.prefix !== undefined && parsed?.prefix !== undefined && options.prefix !== parsed.prefix) {
    throw new InvalidArgumentError('prefix', `the URL says "${parsed.prefix}" and the options say "${options.prefix}"`);
  }
  const db = nodeOptions[0]!.db ?? 0;
  const settings = {
    db,
    commandTimeoutMs: clampToTimerRange(options.commandTimeoutMs ?? 2000),
    connectTimeoutMs: options.connectTimeoutMs ?? 3000,
  };
  const replicas = options.replicas ?? 0;
  // Before any connection opens: a quorum of independent servers has no replicas to wait for.
  if (replicas > 0 && nodeOptions.length > 1)
    throw new InvalidArgumentError('replicas', 'a quorum of independent servers has no replicas to wait for');
  const nodes = nodeOptions.map(
    (node) =>
      new RedisNode(
        nodeLabel(node, topology, onCluster),
        node,
        settings,
        appsOwn,
        topology?.kind === 'cluster' ? topology.seeds : undefined,
      ),
  );
  // Versions up to 0.1 never ran on a Cluster, and their fence hash is in another slot: no floor to read there.
  const names = new KeyNames(options.prefix ?? parsed?.prefix ?? DEFAULT_PREFIX, db, !onCluster);
  const replicaSync =
    replicas > 0 ? { replicas, timeoutMs: options.replicaTimeoutMs ?? Math.min(500, settings.commandTimeoutMs / 2 || 500) } : undefined;
  const nodeSet = new NodeSet(nodes, {
    driftFactor: options.driftFactor ?? 0.01,
    straggleMs: 250,
    ...(replicaSync ? { replicaSync } : {}),
  });
  const waiting = { pollIntervalMs: options.pollIntervalMs ?? 2000, splitVoteRetries: 3, retryJitterMs: 50 };
  // A quorum's semaphore slot needs more nodes than its locks (slot-quorum.ts, capabilities.semaphoreNeeds).
  const backend = nodeSet.isQuorum
    ? new QuorumBackend(nodeSet, names, waiting)
    : new SingleNodeBackend(nodeSet, names, waiting, options.fairness === 'barging');
  return createProvider(backend, common);
}

function nodeLabel(node: RedisOptions, topology: Topology | undefined, onCluster: boolean): string {
  if (onCluster && topology?.kind !== 'cluster') return "redis cluster (the app's client)";
  if (topology?.kind === 'cluster') return `redis cluster ${topology.seeds.map((seed) => `${seed.host}:${seed.port}`).join(',')}`;
  if (node.sentinels) return `redis sentinel ${node.name ?? ''}`;
  return `redis ${node.host ?? '127.0.0.1'}:${node.port ?? 6379}`;
}

/** The connection settings of the app's client; a Cluster's (db 0, no host of its own) hold none that Holdfast reads. */
function appsOwnOptions(client: Redis): RedisOptions {
  return isCluster(client) ? {} : client.options;
}

/** Entry point used by `createLockProvider('redis://...')`; `options.adapter` takes the settings above except url and nodes. */
export function createProviderFromUrl(url: string, options: CreateLockProviderOptions = {}): LockProvider {
  return createRedisProvider({
    ...adapterOptions(options.adapter),
    url,
    ...providerOptions(options),
  });
}
