import type { CreateLockProviderOptions, LockProvider } from '@holdfast/core';
import { InvalidArgumentError } from '@holdfast/core';
import { clampToTimerRange, createProvider, providerOptions } from '@holdfast/core/backend';
import { DEFAULT_PREFIX, KeyNames } from './key-names.js';
import { NodeSet } from './node-set.js';
import { adapterOptions, checkOptions, type RedisProviderOptions } from './options.js';
import { QuorumBackend } from './quorum-backend.js';
import { RedisNode } from './redis-node.js';
import { SingleNodeBackend } from './single-node-backend.js';
import { parseRedisUrl } from './url.js';

export { QUORUM_CAPABILITIES, SINGLE_NODE_CAPABILITIES } from './capabilities.js';
export { FOREIGN_OWNER } from './inspection.js';
export { DEFAULT_PREFIX } from './key-names.js';
export type { RedisProviderOptions } from './options.js';

/** A Redis-backed LockProvider: one server (strict fencing) or a Redlock quorum (fencing 'none'). */
export function createRedisProvider(options: RedisProviderOptions): LockProvider {
  checkOptions(options);
  const common = providerOptions(options);
  const parsed = options.url === undefined ? undefined : parseRedisUrl(options.url);
  if (options.url !== undefined && options.nodes !== undefined)
    throw new InvalidArgumentError('options', 'give a Redis url or nodes, not both');
  const nodeOptions = options.nodes ?? parsed?.nodes;
  if (!nodeOptions || nodeOptions.length === 0) throw new InvalidArgumentError('options', 'give a Redis url or nodes');
  if (options.prefix !== undefined && parsed?.prefix !== undefined && options.prefix !== parsed.prefix) {
    throw new InvalidArgumentError('prefix', `the URL says "${parsed.prefix}" and the options say "${options.prefix}"`);
  }
  const db = nodeOptions[0]!.db ?? 0;
  const settings = {
    db,
    commandTimeoutMs: clampToTimerRange(options.commandTimeoutMs ?? 2000),
    connectTimeoutMs: options.connectTimeoutMs ?? 3000,
  };
  const nodes = nodeOptions.map((node) => new RedisNode(`redis ${node.host ?? '127.0.0.1'}:${node.port ?? 6379}`, node, settings));
  const names = new KeyNames(options.prefix ?? parsed?.prefix ?? DEFAULT_PREFIX, db);
  const nodeSet = new NodeSet(nodes, { driftFactor: options.driftFactor ?? 0.01, straggleMs: 250 });
  const waiting = { pollIntervalMs: options.pollIntervalMs ?? 2000, splitVoteRetries: 3, retryJitterMs: 50 };
  // Semaphores only on one server (see SingleNodeBackend): core answers UnsupportedError for a quorum.
  const backend = nodeSet.isQuorum ? new QuorumBackend(nodeSet, names, waiting) : new SingleNodeBackend(nodeSet, names, waiting);
  return createProvider(backend, common);
}

/** Entry point used by `createLockProvider('redis://...')`; `options.adapter` takes the settings above except url and nodes. */
export function createProviderFromUrl(url: string, options: CreateLockProviderOptions = {}): LockProvider {
  return createRedisProvider({
    ...adapterOptions(options.adapter),
    url,
    ...providerOptions(options),
  });
}
