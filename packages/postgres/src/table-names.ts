import { InvalidArgumentError } from '@holdfast/core';

/** The default locks table; its fence counters live in `<table>_fences`. */
export const DEFAULT_TABLE = 'holdfast_locks';

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
// PostgreSQL truncates identifiers at 63 bytes; the fence table adds "_fences" (7).
const MAX_TABLE_LENGTH = 63 - '_fences'.length;

/** The two tables of one lock space, quoted for SQL, and the NOTIFY channel of its releases. */
export interface TableNames {
  /** As configured: `holdfast_locks` or `myschema.holdfast_locks`. */
  readonly name: string;
  /** `"holdfast_locks"` or `"myschema"."holdfast_locks"`. */
  readonly locks: string;
  readonly fences: string;
  /** pg_notify channel: the configured name itself. */
  readonly channel: string;
}

/**
 * `table` or `schema.table`, each a lower-case SQL identifier (letters, digits, underscores), so
 * that the name means the same quoted or not and is never a way to inject SQL.
 */
export function tableNames(name: unknown = DEFAULT_TABLE): TableNames {
  if (typeof name !== 'string') throw new InvalidArgumentError('table', `expected a string, got ${typeof name}`);
  const parts = name.split('.');
  const table = parts[parts.length - 1]!;
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new InvalidArgumentError(
      'table',
      `"${name}" is not a table name like holdfast_locks or myschema.holdfast_locks (lower-case letters, digits, _)`,
    );
  }
  if (table.length > MAX_TABLE_LENGTH || (parts.length === 2 && parts[0]!.length > 63)) {
    throw new InvalidArgumentError('table', `"${name}" is too long (the table name at most ${MAX_TABLE_LENGTH} characters)`);
  }
  const quote = (parts: readonly string[]): string => parts.map((part) => `"${part}"`).join('.');
  return {
    name,
    locks: quote(parts),
    fences: quote([...parts.slice(0, -1), `${table}_fences`]),
    channel: name,
  };
}
