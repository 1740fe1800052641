import { type CommonProviderOptions, InvalidArgumentError } from '@holdfast/core';
import { COMMON_PROVIDER_OPTION_NAMES, checkOptionNames, checkTimerRange } from '@holdfast/core/backend';
import type { Pool } from 'pg';
import { checkMode, type PostgresMode } from './url.js';

export interface PostgresProviderOptions extends CommonProviderOptions {
  /** `postgres://user:password@host:5432/db` (or `postgresql://`), see parsePostgresUrl. Either this or `pool`. */
  readonly url?: string | URL;
  /**
   * The app's own pg.Pool, left open on close(). Each call borrows a connection for one statement
   * and gives it back; only the LISTEN connection is separate (opened with the pool's settings).
   */
  readonly pool?: Pool;
  /**
   * 'lease' (default): a row per held lock with an expiry, renewed by core. 'session': a PostgreSQL
   * advisory lock held by a dedicated connection per lock, freed when that connection ends
   * (docs/semantics-postgres.md, "Session mode").
   */
  readonly mode?: PostgresMode;
  /** The locks table, `name` or `schema.name` (lower-case identifiers); fences go in `<name>_fences`. Default `holdfast_locks`. */
  readonly table?: string;
  /** Create both tables on first use (CREATE TABLE IF NOT EXISTS). false: you apply the documented DDL. Default true. */
  readonly createTables?: boolean;
  /** Lease mode: longest wait between checks of a busy key when no NOTIFY arrives (a lease that just ran out). Default 2000 ms. */
  readonly pollIntervalMs?: number;
  /** Longest time to open a connection (own pool and the LISTEN connection). Default 3000 ms. */
  readonly connectTimeoutMs?: number;
}

/** What `createLockProvider(url, { adapter })` may set: the rest comes from the URL or core. */
const ADAPTER_OPTIONS = ['mode', 'table', 'createTables', 'pollIntervalMs', 'connectTimeoutMs'] as const;

const PROVIDER_OPTIONS = ['url', 'pool', ...COMMON_PROVIDER_OPTION_NAMES, ...ADAPTER_OPTIONS] as const;

type AdapterOptions = Pick<PostgresProviderOptions, (typeof ADAPTER_OPTIONS)[number]>;

/** `options.adapter` of createLockProvider: every key honoured, or an InvalidArgumentError. */
export function adapterOptions(adapter: Readonly<Record<string, unknown>> | undefined): AdapterOptions {
  if (adapter === undefined) return {};
  if (adapter === null || typeof adapter !== 'object')
    throw new InvalidArgumentError('adapter', 'expected an object of PostgreSQL settings');
  checkOptionNames(Object.keys(adapter), { backend: 'PostgreSQL', known: ADAPTER_OPTIONS, where: 'adapter.' });
  return adapter as AdapterOptions;
}

/** Types and ranges of the settings, before anything connects. */
export function checkOptions(options: PostgresProviderOptions): void {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object');
  checkOptionNames(Object.keys(options), { backend: 'PostgreSQL', known: PROVIDER_OPTIONS });
  if ((options.url === undefined) === (options.pool === undefined))
    throw new InvalidArgumentError('options', 'give a PostgreSQL url or a pool (one of them)');
  if (options.pool !== undefined && typeof (options.pool as Partial<Pool> | null)?.connect !== 'function') {
    throw new InvalidArgumentError('pool', 'expected a pg.Pool');
  }
  if (options.mode !== undefined) checkMode(options.mode, 'mode');
  if (options.createTables !== undefined && typeof options.createTables !== 'boolean')
    throw new InvalidArgumentError('createTables', 'expected true or false');
  for (const name of ['pollIntervalMs', 'connectTimeoutMs'] as const) {
    const value = options[name];
    const valid = value === undefined || (typeof value === 'number' && Number.isFinite(value) && value >= 1);
    if (!valid) throw new InvalidArgumentError(name, `expected a finite number of ms >= 1, got ${String(value)}`);
    if (value !== undefined) checkTimerRange(name, value);
  }
}
