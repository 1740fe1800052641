import { type CommonProviderOptions, InvalidArgumentError } from '@holdfast/core';
import { COMMON_PROVIDER_OPTION_NAMES, checkOptionNames, checkTimerRange } from '@holdfast/core/backend';
import type { Cluster, Redis, RedisOptions } from 'ioredis';

export interface RedisProviderOptions extends CommonProviderOptions {
  /**
   * `redis://host:6379/0`, or a quorum: `redis://h1:6379?quorum=h2:6379,h3:6379` (see parseRedisUrl).
   * Either this or `nodes`.
   */
  readonly url?: string | URL;
  /** ioredis options per independent server; more than one means Redlock quorum mode. */
  readonly nodes?: readonly RedisOptions[];
  /**
   * The app's own ioredis client for one server (a `Redis`, also one configured with Sentinels) or
   * for a Redis Cluster (a `Cluster`), instead of `url` or `nodes`. Holdfast never closes
   * it or changes its options or db (its db is the one the locks use); wake-ups use a `duplicate()`
   * that Holdfast owns and closes. Its own settings apply to Holdfast's commands (its command timeout,
   * offline queue and retries: see docs/semantics-redis.md).
   */
  readonly client?: Redis | Cluster;
  /**
   * Prepended to every Redis key. Default `holdfast:`, so lock keys never meet the app's own keys.
   * `''` makes the Redis key the Holdfast key, which is what the redlock package uses as its
   * resource name: the setting for locks shared with redlock users. Also `?prefix=` in the URL.
   */
  readonly prefix?: string;
  /**
   * One server: `'fifo'` (default) queues waiters on the server and grants them in arrival order;
   * `'barging'` lets whoever asks first after a release win (more grants per second on a hot key,
   * unfair waits). Also `adapter: { fairness }` in createLockProvider.
   */
  readonly fairness?: 'fifo' | 'barging';
  /** Longest wait between checks of a busy key if no wake-up arrives. Default 2000 ms. */
  readonly pollIntervalMs?: number;
  /** Per-command time limit, so a hung server counts as failed. Default 2000 ms; 0 = none (as is anything above 2^31-1 ms, Node's longest timer). */
  readonly commandTimeoutMs?: number;
  /** Longest time to open a usable connection (TCP, handshake, SELECT). Default 3000 ms. */
  readonly connectTimeoutMs?: number;
  /** Quorum mode: clock drift allowance per ms of TTL. Default 0.01 (plus 2 ms), as redlock. */
  readonly driftFactor?: number;
  /**
   * One server with replicas (Sentinel, Cluster, or a primary with replicas): a grant or renewal
   * counts only once this many replicas acknowledged it (Redis `WAIT`), so a failover to one of
   * them cannot lose it. A shorter count withdraws the grant (a BackendError; a renewal is retried).
   * Default 0: replication is asynchronous, and a failover can lose the last grants
   * (docs/semantics-redis.md gives the window). Not for a quorum.
   */
  readonly replicas?: number;
  /** How long `WAIT` may take for `replicas`, in ms. Default 500; below `commandTimeoutMs`. */
  readonly replicaTimeoutMs?: number;
}

/** What `createLockProvider(url, { adapter })` may set for Redis: the rest comes from the URL or core. */
const ADAPTER_OPTIONS = [
  'prefix',
  'fairness',
  'pollIntervalMs',
  'commandTimeoutMs',
  'connectTimeoutMs',
  'driftFactor',
  'replicas',
  'replicaTimeoutMs',
] as const;

const PROVIDER_OPTIONS = ['url', 'nodes', 'client', ...COMMON_PROVIDER_OPTION_NAMES, ...ADAPTER_OPTIONS] as const;

/** Old names, refused by name so that a setting is never silently ignored. */
const RENAMED: Readonly<Record<string, string>> = { safetyPollMs: 'pollIntervalMs' };

function checkNames(names: readonly string[], known: readonly string[], where: string): void {
  checkOptionNames(names, { backend: 'Redis', known, renamed: RENAMED, where });
}

type AdapterOptions = Pick<RedisProviderOptions, (typeof ADAPTER_OPTIONS)[number]>;

/** `options.adapter` of createLockProvider: every key honoured, or an InvalidArgumentError. */
export function adapterOptions(adapter: Readonly<Record<string, unknown>> | undefined): AdapterOptions {
  if (adapter === undefined) return {};
  if (adapter === null || typeof adapter !== 'object') throw new InvalidArgumentError('adapter', 'expected an object of Redis settings');
  checkNames(Object.keys(adapter), ADAPTER_OPTIONS, 'adapter.');
  return adapter as AdapterOptions;
}

/** Types and ranges of the Redis settings, before anything connects. */
export function checkOptions(options: RedisProviderOptions): void {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object');
  checkNames(Object.keys(options), PROVIDER_OPTIONS, '');
  if (options.prefix !== undefined && typeof options.prefix !== 'string') throw new InvalidArgumentError('prefix', 'expected a string');
  checkClient(options);
  if (options.fairness !== undefined && options.fairness !== 'fifo' && options.fairness !== 'barging') {
    throw new InvalidArgumentError('fairness', `expected "fifo" or "barging", got ${String(options.fairness)}`);
  }
  nonNegative('pollIntervalMs', options.pollIntervalMs, 1);
  nonNegative('commandTimeoutMs', options.commandTimeoutMs, 0);
  nonNegative('connectTimeoutMs', options.connectTimeoutMs, 1);
  if (
    options.driftFactor !== undefined &&
    !(typeof options.driftFactor === 'number' && options.driftFactor >= 0 && options.driftFactor < 0.5)
  ) {
    throw new InvalidArgumentError('driftFactor', `expected a number from 0 to below 0.5, got ${String(options.driftFactor)}`);
  }
  if (options.replicas !== undefined && !(Number.isInteger(options.replicas) && options.replicas >= 0 && options.replicas <= 64)) {
    throw new InvalidArgumentError('replicas', `expected an integer from 0 to 64, got ${String(options.replicas)}`);
  }
  nonNegative('replicaTimeoutMs', options.replicaTimeoutMs, 1);
  const commandTimeout = options.commandTimeoutMs ?? 2000;
  if (options.replicaTimeoutMs !== undefined && commandTimeout !== 0 && options.replicaTimeoutMs >= commandTimeout) {
    throw new InvalidArgumentError('replicaTimeoutMs', `must be below commandTimeoutMs (${commandTimeout}): WAIT is a command`);
  }
  if ((options.replicas ?? 0) > 0 && (options.nodes?.length ?? 0) > 1) {
    throw new InvalidArgumentError('replicas', 'a quorum of independent servers has no replicas to wait for');
  }
  const dbs = new Set((options.nodes ?? []).map((node) => node.db ?? 0));
  for (const db of dbs) {
    if (!Number.isInteger(db) || db < 0) throw new InvalidArgumentError('nodes', `db ${String(db)} is not a non-negative integer`);
  }
  if (dbs.size > 1) throw new InvalidArgumentError('nodes', 'every node must use the same db');
  const seen = new Set<string>();
  for (const node of options.nodes ?? []) {
    const id = `${(node.host ?? '127.0.0.1').toLowerCase()}:${node.port ?? 6379}`;
    if (seen.has(id)) throw new InvalidArgumentError('nodes', `node ${id} is listed twice; a quorum needs distinct servers`);
    seen.add(id);
  }
}

function checkClient(options: RedisProviderOptions): void {
  if (options.client === undefined) return;
  const client = options.client as unknown as Record<string, unknown> | null;
  if (
    client === null ||
    typeof client !== 'object' ||
    typeof client['duplicate'] !== 'function' ||
    typeof client['evalsha'] !== 'function'
  ) {
    throw new InvalidArgumentError('client', 'expected an ioredis Redis or Cluster instance');
  }
  if (options.url !== undefined || options.nodes !== undefined)
    throw new InvalidArgumentError('options', 'give a Redis url, nodes or client, not more than one');
}

function nonNegative(name: string, value: unknown, min: number): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new InvalidArgumentError(name, `expected a finite number >= ${min}, got ${String(value)}`);
  }
  // commandTimeoutMs has a "none" (0), so a larger value means none too: the factory clamps it instead.
  if (name !== 'commandTimeoutMs') checkTimerRange(name, value);
}
