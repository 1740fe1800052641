import type { CreateLockProviderOptions, LockProvider } from '@holdfast/core';
import { InvalidArgumentError } from '@holdfast/core';
import { createProvider } from '@holdfast/core/backend';
import type { RedisOptions } from 'ioredis';
import { KeyNames } from './key-names.js';
import { RedisBackend } from './redis-backend.js';
import { RedisNode } from './redis-node.js';
import { parseRedisUrl } from './url.js';

export { QUORUM_CAPABILITIES, SINGLE_NODE_CAPABILITIES } from './capabilities.js';
export { FOREIGN_OWNER } from './inspection.js';
export { KeyNames } from './key-names.js';
export { RedisBackend } from './redis-backend.js';
export { parseRedisUrl } from './url.js';

export interface RedisProviderOptions {
  /**
   * `redis://host:6379/0`, or a quorum: `redis://h1:6379?quorum=h2:6379,h3:6379` (see parseRedisUrl).
   * Either this or `nodes`.
   */
  readonly url?: string | URL;
  /** ioredis options per independent server; more than one means Redlock quorum mode. */
  readonly nodes?: readonly RedisOptions[];
  /** Prepended to every Redis key. Default none: Holdfast key = Redis key = redlock resource. */
  readonly prefix?: string;
  readonly owner?: string;
  /** Longest wait between checks of a busy key if no wake-up arrives. Default 2000 ms. */
  readonly safetyPollMs?: number;
  /** Per-command time limit, so a hung server counts as failed. Default 2000 ms; 0 = none. */
  readonly commandTimeoutMs?: number;
  /** Quorum mode: clock drift allowance per ms of TTL. Default 0.01 (plus 2 ms), as redlock. */
  readonly driftFactor?: number;
}

/** A Redis-backed LockProvider: one server (strict fencing) or a Redlock quorum (fencing 'none'). */
export function createRedisProvider(options: RedisProviderOptions): LockProvider {
  const parsed = options.url === undefined ? undefined : parseRedisUrl(new URL(options.url));
  const nodeOptions = options.nodes ?? parsed?.nodes;
  if (!nodeOptions || nodeOptions.length === 0) throw new InvalidArgumentError('options', 'give a Redis url or nodes');
  const commandTimeoutMs = options.commandTimeoutMs ?? 2000;
  const nodes = nodeOptions.map((node) => new RedisNode(`redis ${node.host ?? '127.0.0.1'}:${node.port ?? 6379}`, node, commandTimeoutMs));
  const names = new KeyNames(options.prefix ?? parsed?.prefix ?? '', nodeOptions[0]!.db ?? 0);
  const backend = new RedisBackend(nodes, names, {
    safetyPollMs: options.safetyPollMs ?? 2000,
    driftFactor: options.driftFactor ?? 0.01,
    splitVoteRetries: 3,
    retryJitterMs: 50,
  });
  return createProvider(backend, options.owner === undefined ? {} : { owner: options.owner });
}

/** Entry point used by `createLockProvider('redis://...')`. */
export function createProviderFromUrl(url: string, options: CreateLockProviderOptions = {}): LockProvider {
  return createRedisProvider({ url, ...(options.owner === undefined ? {} : { owner: options.owner }) });
}
