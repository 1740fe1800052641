import type { CreateLockProviderOptions, LockProvider } from '@holdfast/core';
import { createProvider, providerOptions } from '@holdfast/core/backend';
import { LockTable } from './lock-table.js';
import { modeStatements } from './mode-statements.js';
import { ModeTable } from './mode-table.js';
import { adapterOptions, checkOptions, type PostgresProviderOptions } from './options.js';
import { openPool } from './pool.js';
import { PostgresBackend } from './postgres-backend.js';
import { ReleaseListener } from './release-listener.js';
import { SchemaGuard } from './schema-guard.js';
import { SessionBackend } from './session-backend.js';
import { SessionConnections } from './session-connections.js';
import { sessionStatements } from './session-statements.js';
import { settingsFrom } from './settings.js';
import { slotStatements } from './slot-statements.js';
import { SlotTable } from './slot-table.js';
import { SqlRunner } from './sql-runner.js';
import { statements } from './statements.js';
import { tableNames } from './table-names.js';
import { TableQuery } from './table-query.js';

export { POSTGRES_CAPABILITIES, POSTGRES_SESSION_CAPABILITIES } from './capabilities.js';
export type { PostgresProviderOptions } from './options.js';
export { createTablesSql } from './schema.js';
export { DEFAULT_TABLE, type TableNames, tableNames } from './table-names.js';
export { type PostgresMode, parsePostgresUrl, type UrlSettings } from './url.js';

/** A PostgreSQL-backed LockProvider: leases in a table, or advisory locks in session mode (see docs/semantics-postgres.md). */
export function createPostgresProvider(options: PostgresProviderOptions): LockProvider {
  checkOptions(options);
  // The provider-level options too, before a pool is created.
  const common = providerOptions(options);
  const settings = settingsFrom(options);
  const names = tableNames(settings.table);
  const { pool, sockets, clientConfig } = openPool(options.pool, settings);
  const runner = new SqlRunner(pool, sockets);
  const query = new TableQuery(runner, names, new SchemaGuard(runner, names, settings.createTables));
  if (settings.mode === 'session') {
    const connections = new SessionConnections(clientConfig, settings.connectTimeoutMs);
    return createProvider(new SessionBackend(runner, query, connections, sessionStatements(names), names.name), common);
  }
  const listener = new ReleaseListener(clientConfig, names.channel, settings.connectTimeoutMs);
  const locks = new LockTable(query, statements(names));
  const slots = new SlotTable(query, slotStatements(names));
  const backend = new PostgresBackend(runner, locks, slots, new ModeTable(query, modeStatements(names)), listener, settings.pollIntervalMs);
  return createProvider(backend, common);
}

/** Entry point used by `createLockProvider('postgres://...')`; `options.adapter` takes mode, table, createTables, pollIntervalMs, connectTimeoutMs. */
export function createProviderFromUrl(url: string, options: CreateLockProviderOptions = {}): LockProvider {
  return createPostgresProvider({ ...adapterOptions(options.adapter), url, ...providerOptions(options) });
}
