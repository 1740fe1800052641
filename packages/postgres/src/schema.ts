import type { TableNames } from './table-names.js';

/**
 * The two tables, as documented in docs/semantics-postgres.md. Keys sort and compare byte-wise
 * (COLLATE "C"), so that LIKE 'prefix%' uses the primary key index whatever the database's locale.
 * Fence rows are never deleted: they keep every key's token rising after its lock row is gone.
 * A semaphore is one row too: its limit in slot_limit, its holders in the slots array (see slot-statements.ts).
 * In session mode the fence row also names the key's last holder (session-statements.ts).
 */
export function createTablesSql(t: TableNames): string {
  return `CREATE TABLE IF NOT EXISTS ${t.locks} (
  key text COLLATE "C" PRIMARY KEY,
  lock_id text NOT NULL,
  owner text NOT NULL,
  reason text,
  token bigint NOT NULL,
  acquired_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  slot_limit integer,
  slots jsonb
);
CREATE TABLE IF NOT EXISTS ${t.fences} (
  key text COLLATE "C" PRIMARY KEY,
  token bigint NOT NULL,
  session jsonb
);`;
}

/**
 * Creating the tables from several processes at once can fail on PostgreSQL's catalog (a duplicate
 * pg_type row) despite IF NOT EXISTS; a transaction-scoped advisory lock makes them take turns.
 */
export function createTablesStatement(t: TableNames): string {
  return `DO $holdfast$ BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('holdfast schema ' || '${t.name}'));
  ${createTablesSql(t).replace(/\n/g, '\n  ')}
END $holdfast$`;
}
