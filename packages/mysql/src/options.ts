import { type CommonProviderOptions, InvalidArgumentError } from '@holdfast/core';
import { COMMON_PROVIDER_OPTION_NAMES, checkOptionNames, checkTimerRange } from '@holdfast/core/backend';
import type { Pool } from 'mysql2';
import type { Pool as PromisePool } from 'mysql2/promise';

export interface MysqlProviderOptions extends CommonProviderOptions {
  /** `mysql://user:password@host:3306/db`, see parseMysqlUrl. Either this or `pool`. */
  readonly url?: string | URL;
  /**
   * The app's own mysql2 pool (`mysql2` or `mysql2/promise`), left open on close(). Each call
   * borrows a connection for its statements, sent back to back, and gives it back. Its connections
   * must use autocommit (the server default).
   */
  readonly pool?: Pool | PromisePool;
  /** The locks table, `name` or `database.name` (lower-case identifiers); fences go in `<name>_fences`. Default `holdfast_locks`. */
  readonly table?: string;
  /** Create both tables on first use (CREATE TABLE IF NOT EXISTS). false: you apply the documented DDL. Default true. */
  readonly createTables?: boolean;
  /** Longest wait between two looks at a busy key: waiters poll, starting at 10 ms and backing off to this. Default 250 ms. */
  readonly pollIntervalMs?: number;
  /** Longest time to open a connection of our own pool. Default 3000 ms. */
  readonly connectTimeoutMs?: number;
}

/** What `createLockProvider(url, { adapter })` may set: the rest comes from the URL or core. */
export const ADAPTER_OPTIONS = ['table', 'createTables', 'pollIntervalMs', 'connectTimeoutMs'] as const;
const PROVIDER_OPTIONS = ['url', 'pool', ...COMMON_PROVIDER_OPTION_NAMES, ...ADAPTER_OPTIONS] as const;

export type AdapterOptions = Pick<MysqlProviderOptions, (typeof ADAPTER_OPTIONS)[number]>;

/** `options.adapter` of createLockProvider: every key honoured, or an InvalidArgumentError. */
export function adapterOptions(adapter: Readonly<Record<string, unknown>> | undefined): AdapterOptions {
  if (adapter === undefined) return {};
  if (adapter === null || typeof adapter !== 'object') throw new InvalidArgumentError('adapter', 'expected an object of MySQL settings');
  checkOptionNames(Object.keys(adapter), { backend: 'MySQL', known: ADAPTER_OPTIONS, where: 'adapter.' });
  return adapter as AdapterOptions;
}

/** Names, types and ranges of the options, before anything connects. */
export function checkOptions(options: MysqlProviderOptions): void {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object');
  checkOptionNames(Object.keys(options), { backend: 'MySQL', known: PROVIDER_OPTIONS });
  if ((options.url === undefined) === (options.pool === undefined))
    throw new InvalidArgumentError('options', 'give a MySQL url or a pool (one of them)');
  if (options.pool !== undefined && typeof (options.pool as Partial<Pool> | null)?.getConnection !== 'function') {
    throw new InvalidArgumentError('pool', 'expected a mysql2 pool (createPool from mysql2 or mysql2/promise)');
  }
  if (![undefined, true, false].includes(options.createTables)) throw new InvalidArgumentError('createTables', 'expected true or false');
  for (const name of ['pollIntervalMs', 'connectTimeoutMs'] as const) {
    const ms = options[name];
    if (ms !== undefined && !(typeof ms === 'number' && Number.isFinite(ms) && ms >= 1)) {
      throw new InvalidArgumentError(name, `expected a finite number of ms >= 1, got ${String(ms)}`);
    }
    if (ms !== undefined) checkTimerRange(name, ms);
  }
}
