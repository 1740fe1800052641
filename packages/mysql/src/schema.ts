import type { TableNames } from './table-names.js';

/**
 * The two tables, one statement each (as documented in docs/semantics-mysql.md).
 * - Keys are the UTF-8 bytes in a VARBINARY: compared byte for byte, so no collation can make two
 *   keys equal (utf8mb4_bin still ignores trailing spaces on MariaDB and MySQL 5.7) and a prefix is a
 *   byte range on the primary key. 256 bytes is core's key limit.
 * - Times are DATETIME(3) in UTC from UTC_TIMESTAMP(3), the server's clock. Not TIMESTAMP: that
 *   converts through each session's time_zone (an app pool may set its own) and ends in 2038.
 * - InnoDB, named: the grant relies on its row locks; another engine would make it unsafe.
 * - Fence rows are never deleted: they keep every key's token rising after its lock row is gone.
 * - A semaphore is one row too: its limit in slot_limit, its holders in the slots array (JSON:
 *   native on MySQL 8, a checked LONGTEXT on MariaDB; see slot-statements.ts).
 */
export function createTableStatements(t: TableNames): readonly string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${t.locks} (
  \`key\` VARBINARY(256) NOT NULL PRIMARY KEY,
  lock_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  owner TEXT CHARACTER SET utf8mb4 NOT NULL,
  reason TEXT CHARACTER SET utf8mb4 NULL,
  token BIGINT UNSIGNED NOT NULL,
  acquired_at DATETIME(3) NOT NULL,
  expires_at DATETIME(3) NOT NULL,
  slot_limit INT NULL,
  slots JSON NULL
) ENGINE=InnoDB`,
    `CREATE TABLE IF NOT EXISTS ${t.fences} (
  \`key\` VARBINARY(256) NOT NULL PRIMARY KEY,
  token BIGINT UNSIGNED NOT NULL
) ENGINE=InnoDB`,
  ];
}

/** The DDL as one script, for people who manage the schema themselves (createTables: false). */
export function createTablesSql(t: TableNames): string {
  return `${createTableStatements(t).join(';\n')};`;
}
