import type { CreateLockProviderOptions, LockProvider } from '@holdfast/core';
import { createProvider, providerOptions } from '@holdfast/core/backend';
import { LockTable } from './lock-table.js';
import { modeTakeStatement } from './mode-statements.js';
import { ModeTable } from './mode-table.js';
import { MysqlBackend } from './mysql-backend.js';
import { adapterOptions, checkOptions, type MysqlProviderOptions } from './options.js';
import { openPool } from './pool.js';
import { SchemaGuard } from './schema-guard.js';
import { settingsFrom } from './settings.js';
import { slotStatements } from './slot-statements.js';
import { SlotTable } from './slot-table.js';
import { SqlRunner } from './sql-runner.js';
import { statements } from './statements.js';
import { tableNames } from './table-names.js';
import { TableSession } from './table-session.js';

export { MYSQL_CAPABILITIES } from './capabilities.js';
export type { MysqlWake } from './mysql-backend.js';
export type { MysqlProviderOptions } from './options.js';
export { createTablesSql } from './schema.js';
export { DEFAULT_TABLE, type TableNames, tableNames } from './table-names.js';
export { parseMysqlUrl, type UrlSettings } from './url.js';

/** A MySQL/MariaDB-backed LockProvider: leases in a table (see docs/semantics-mysql.md). */
export function createMysqlProvider(options: MysqlProviderOptions): LockProvider {
  checkOptions(options);
  // The provider-level options too, before a pool is created.
  const common = providerOptions(options);
  const settings = settingsFrom(options);
  const names = tableNames(settings.table);
  const { pool, sockets } = openPool(options.pool, { uri: settings.uri, connectTimeout: settings.connectTimeoutMs });
  const runner = new SqlRunner(pool, sockets);
  const db = new TableSession(runner, names, new SchemaGuard(runner, names, settings.createTables));
  const sql = statements(names);
  const backend = new MysqlBackend(
    runner,
    new LockTable(db, sql, names),
    new SlotTable(db, sql, slotStatements(names)),
    new ModeTable(db, sql, modeTakeStatement(names)),
    settings.pollIntervalMs,
  );
  return createProvider(backend, common);
}

/** Entry point used by `createLockProvider('mysql://...')`; `options.adapter` takes table, createTables, pollIntervalMs, connectTimeoutMs. */
export function createProviderFromUrl(url: string, options: CreateLockProviderOptions = {}): LockProvider {
  return createMysqlProvider({ ...adapterOptions(options.adapter), url, ...providerOptions(options) });
}
