import type { TableNames } from './table-names.js';

/**
 * The SQL the backend sends, built once per table. Every time is the server's: UTC_TIMESTAMP(3),
 * which a statement evaluates once, and the stored DATETIME(3) columns. Not NOW(3), which follows
 * each session's time_zone (an app's pool may set one) and repeats an hour when daylight saving ends.
 * Numbers come back as text and keys as bytes, whatever the app's pool does with types.
 */
export interface Statements {
  /** [key] → insertId: a new value of the key's fence counter (LAST_INSERT_ID(expr), MySQL's documented sequence idiom). */
  readonly reserve: string;
  /** [lock id, owner, reason, ttl µs, key, reserved, lock id, owner, reason, reserved, ttl µs] → takes the row if free. */
  readonly take: string;
  /** [key] → the key's live row (LIVE columns: a lock, or a semaphore with its slots), or no row when the key is free. */
  readonly live: string;
  /** [ttl µs, key, lock id] → affectedRows 1 when the live grant was extended. */
  readonly extend: string;
  /** [key, lock id] → affectedRows 1 when this grant's row was there (live or lapsed) and is now gone. */
  readonly release: string;
  /** [from, to] → every live plain lock with from <= key < to. */
  readonly list: string;
  /** [key] → affectedRows 1 when a live lock, or a semaphore with a live slot, was freed. */
  readonly forceRelease: string;
}

export const NOW = 'UTC_TIMESTAMP(3)';
/** The server's now in ms since the epoch (UTC), as the slots array stores times. */
export const NOW_MS = `(TIMESTAMPDIFF(MICROSECOND, '1970-01-01', ${NOW}) DIV 1000)`;
/** A DATETIME(3) column as text: ms since the epoch (UTC). */
export const epochMs = (column: string): string => `CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01', ${column}) DIV 1000 AS CHAR)`;
/**
 * A lock row: its holder, token and lease, and how much of the lease is left by the server's clock;
 * for a semaphore also its limit and slots (as UTF-8 bytes, whatever the connection's charset) and
 * the server's now, against which the slots' expiries are judged.
 */
const LIVE = `\`key\`, lock_id, owner, reason, CAST(token AS CHAR) AS token, ${epochMs('acquired_at')} AS acquired_ms, ${epochMs('expires_at')} AS expires_ms,
  CAST(TIMESTAMPDIFF(MICROSECOND, ${NOW}, expires_at) DIV 1000 AS CHAR) AS remaining_ms, slot_limit,
  CAST(CAST(slots AS CHAR CHARACTER SET utf8mb4) AS BINARY) AS slots, CAST(${NOW_MS} AS CHAR) AS now_ms`;

/**
 * A grant is a few statements, each atomic on its own (autocommit), so a client that stalls between
 * them holds no row lock that could stall anyone else:
 * 1. live: a plain read of the key's row; held by someone else: busy (nothing written), with the
 *    holder's token and remaining lease for the wait that follows; a semaphore in use: a conflict;
 * 2. reserve: bump the key's fence counter;
 * 3. take: write the lock row with that token, only if the reservation is still the newest (read
 *    under a shared lock, so no newer reservation can commit meanwhile, whatever the isolation
 *    level) and the row's lease has run out by the server's clock (the ON DUPLICATE KEY UPDATE path
 *    reads the newest committed row, not a snapshot). Every token is a reservation and a grant needs
 *    the newest one, so tokens rise in grant order even if lock rows are deleted in between;
 * 4. live again: whether this attempt's lock id now holds the key (a fresh read: autocommit).
 * Row locks are always taken fence row first, then lock row (take), or lock row alone (release,
 * extend): no two statements can wait for each other. (A reserve that also read the lock row would
 * lock it first and deadlock with take.)
 * In the UPDATE part each column is guarded by the same expiry test, and expires_at comes last:
 * MySQL assigns left to right and later expressions see earlier assignments (so does MariaDB unless
 * sql_mode SIMULTANEOUS_ASSIGNMENT is set, which is as good here).
 */
export function statements(t: TableNames): Statements {
  const free = `${t.locks}.expires_at <= ${NOW}`;
  const keep = (column: string, value: string): string => `${column} = IF(${free}, ${value}, ${t.locks}.${column})`;
  return {
    reserve: `INSERT INTO ${t.fences} (\`key\`, token) VALUES (?, LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 1)`,

    take: `INSERT INTO ${t.locks} (\`key\`, lock_id, owner, reason, token, acquired_at, expires_at)
SELECT f.\`key\`, ?, CONVERT(? USING utf8mb4), CONVERT(? USING utf8mb4), f.token, ${NOW}, ${NOW} + INTERVAL ? MICROSECOND
  FROM ${t.fences} AS f WHERE f.\`key\` = ? AND f.token = ? LOCK IN SHARE MODE
ON DUPLICATE KEY UPDATE ${keep('lock_id', '?')}, ${keep('owner', 'CONVERT(? USING utf8mb4)')}, ${keep('reason', 'CONVERT(? USING utf8mb4)')},
  ${keep('token', '?')}, ${keep('acquired_at', NOW)}, ${keep('slot_limit', 'NULL')}, ${keep('slots', 'NULL')},
  ${keep('expires_at', `${NOW} + INTERVAL ? MICROSECOND`)}`,

    live: `SELECT ${LIVE} FROM ${t.locks} WHERE \`key\` = ? AND expires_at > ${NOW}`,

    extend: `UPDATE ${t.locks} SET expires_at = ${NOW} + INTERVAL ? MICROSECOND WHERE \`key\` = ? AND lock_id = ? AND expires_at > ${NOW}`,

    // An own row whose lease ran out is deleted too: nobody else holds it, and it would only linger.
    release: `DELETE FROM ${t.locks} WHERE \`key\` = ? AND lock_id = ?`,

    list: `SELECT ${LIVE} FROM ${t.locks} WHERE \`key\` >= ? AND \`key\` < ? AND expires_at > ${NOW} AND slot_limit IS NULL ORDER BY \`key\``,

    // A semaphore's row lives as long as its last live slot (slot-statements.ts): all of them go.
    forceRelease: `DELETE FROM ${t.locks} WHERE \`key\` = ? AND expires_at > ${NOW}`,
  };
}

/**
 * The byte range of the keys that start with `prefix`: [prefix, prefix + 0xFF). UTF-8 never contains
 * the byte 0xFF, so every key with the prefix sorts below the upper bound and every other key
 * outside the range; the primary key index serves it, and nothing needs LIKE escaping.
 */
export function prefixRange(prefix: string): [from: Buffer, to: Buffer] {
  const from = Buffer.from(prefix, 'utf8');
  return [from, Buffer.concat([from, Buffer.from([0xff])])];
}
