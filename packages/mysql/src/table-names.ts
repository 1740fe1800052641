import { InvalidArgumentError } from '@holdfast/core';

/** The default locks table; its fence counters live in `<table>_fences`. */
export const DEFAULT_TABLE = 'holdfast_locks';

// Lower case only: with lower_case_table_names=0 (Linux) MySQL table names are case-sensitive and
// elsewhere they are not, so a mixed-case name could mean two tables on one server and one on another.
const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
/** MySQL and MariaDB identifiers are at most 64 characters; the fence table adds "_fences". */
const MAX_NAME = 64;
const FENCE_SUFFIX = '_fences';

/** The two tables of one lock space, quoted for SQL. */
export interface TableNames {
  /** As configured: `holdfast_locks` or `mydb.holdfast_locks`. */
  readonly name: string;
  /** `` `holdfast_locks` `` or `` `mydb`.`holdfast_locks` ``. */
  readonly locks: string;
  readonly fences: string;
}

/**
 * `table` or `database.table`, each a lower-case identifier (letters, digits, underscores): a name
 * that means the same quoted or not, on every server, and is never a way to inject SQL.
 */
export function tableNames(name: unknown = DEFAULT_TABLE): TableNames {
  if (typeof name !== 'string') throw new InvalidArgumentError('table', `expected a string, got ${typeof name}`);
  const parts = name.split('.');
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new InvalidArgumentError(
      'table',
      `"${name}" is not a table name like holdfast_locks or mydb.holdfast_locks (lower-case letters, digits, _)`,
    );
  }
  const table = parts.pop()!;
  if (table.length + FENCE_SUFFIX.length > MAX_NAME || parts.some((database) => database.length > MAX_NAME)) {
    throw new InvalidArgumentError('table', `"${name}" is too long (the table name at most ${MAX_NAME - FENCE_SUFFIX.length} characters)`);
  }
  const quoted = (identifier: string): string => [...parts, identifier].map((part) => `\`${part}\``).join('.');
  return { name, locks: quoted(table), fences: quoted(`${table}${FENCE_SUFFIX}`) };
}
