import { NOW, NOW_MS } from './statements.js';
import type { TableNames } from './table-names.js';

/** The SQL of semaphores, built once per table (the grant's look and reserve are the lock's: statements.ts). */
export interface SlotStatements {
  /** [lock id, owner, reason, ttl ms, limit, key, reserved] → takes a slot if the key is free or its semaphore of this limit has room. */
  readonly take: string;
  /** [lock id, ttl ms, lock id, ttl ms, key, lock id] → affectedRows 1 when the live slot was extended. */
  readonly extend: string;
  /** [lock id, lock id, key, lock id] → affectedRows 1 when this slot was there (live or lapsed) and is now gone. */
  readonly release: string;
  /** [keys] → (key, lock_id) of every live slot of those keys. */
  readonly liveSlots: string;
}

/** The row's slots as a table: position (1-based), lock id, expiry and a read-write grant's mode; NULL slots (a plain lock's row) as none. */
export const slotsOf = (slots: string): string =>
  `JSON_TABLE(COALESCE(${slots}, JSON_ARRAY()), '$[*]' COLUMNS (i FOR ORDINALITY,
    lock_id VARCHAR(64) PATH '$.lock_id', expires_ms BIGINT PATH '$.expires_ms', holder_mode VARCHAR(16) PATH '$.mode')) AS s`;
export const LIVE = `s.expires_ms > ${NOW_MS}`;
export const liveCount = (slots: string): string => `(SELECT COUNT(*) FROM ${slotsOf(slots)} WHERE ${LIVE})`;
/** The JSON path of the first slot matching `where` ('$[2]'), or NULL when none does. */
const pathOf = (slots: string, where: string): string => `(SELECT CONCAT('$[', MIN(s.i) - 1, ']') FROM ${slotsOf(slots)} WHERE ${where})`;
/** A DATETIME(3) from ms since the epoch (no time zone involved: a DATETIME literal plus an interval). */
const fromMs = (ms: string): string => `(TIMESTAMP'1970-01-01 00:00:00' + INTERVAL (${ms}) * 1000 MICROSECOND)`;
/**
 * The lock id as bytes: compared byte for byte whatever collation JSON_TABLE gives its column. The
 * take's parameters are each sent once: a derived table it joins (and ON DUPLICATE KEY UPDATE may read).
 */
const LOCK_ID = '? AS lock_id';

/**
 * [lock id, owner, reason, ttl ms, ...more, key, reserved] → takes a place among the row's holders
 * (a semaphore's slot, a read-write lock's grant) if the row has lapsed or `room` says the newest
 * committed row has room. `more` are further asked columns (a.slot_limit among them), `fields`
 * further JSON fields of the holder. See slotStatements for why each column is guarded as it is.
 */
export function takeStatement(t: TableNames, more: readonly string[], room: string, fields = ''): string {
  const row = t.locks;
  const mine = `JSON_OBJECT('lock_id', CONVERT(a.lock_id USING utf8mb4), 'owner', a.owner, 'reason', a.reason,
    'token', CAST(f.token AS CHAR CHARACTER SET utf8mb4), 'acquired_ms', ${NOW_MS}, 'expires_ms', ${NOW_MS} + a.ttl_ms${fields})`;
  const hasRoom = `(${row}.expires_at <= ${NOW} OR ${room})`;
  // token is assigned first: from then on, equal to the newest reservation exactly when this take happened.
  const ifTaken = (column: string, value: string): string =>
    `${column} = IF(${row}.token = f.token OR ${hasRoom}, ${value}, ${row}.${column})`;
  // A free position: a lapsed slot's, else one past the end (JSON_SET appends there).
  const freePath = `COALESCE(${pathOf(`${row}.slots`, `NOT (${LIVE})`)}, CONCAT('$[', JSON_LENGTH(${row}.slots), ']'))`;
  const asked = [LOCK_ID, 'CONVERT(? USING utf8mb4) AS owner', 'CONVERT(? USING utf8mb4) AS reason', '? AS ttl_ms', ...more];
  return `INSERT INTO ${row} (\`key\`, lock_id, owner, reason, token, acquired_at, expires_at, slot_limit, slots)
SELECT f.\`key\`, '', '', NULL, f.token, ${NOW}, ${fromMs(`${NOW_MS} + a.ttl_ms`)}, a.slot_limit, JSON_ARRAY(${mine})
  FROM ${t.fences} AS f
  JOIN (SELECT ${asked.join(', ')}) AS a
  WHERE f.\`key\` = ? AND f.token = ? LOCK IN SHARE MODE
ON DUPLICATE KEY UPDATE
  token = IF(${hasRoom}, f.token, ${row}.token),
  ${ifTaken('lock_id', "''")}, ${ifTaken('owner', "''")}, ${ifTaken('reason', 'NULL')}, ${ifTaken('acquired_at', NOW)},
  ${ifTaken('slots', `IF(${row}.expires_at <= ${NOW}, JSON_ARRAY(${mine}), JSON_SET(${row}.slots, ${freePath}, ${mine}))`)},
  ${ifTaken('slot_limit', 'a.slot_limit')},
  ${ifTaken('expires_at', `GREATEST(IF(${row}.expires_at > ${NOW}, ${row}.expires_at, ${NOW}), ${fromMs(`${NOW_MS} + a.ttl_ms`)})`)}`;
}

/**
 * A semaphore is ONE row of the locks table: slot_limit, and its holders in the slots JSON array
 * ({lock_id, owner, reason, token, acquired_ms, expires_ms}, times in ms since the epoch by the
 * server's clock). So every decision about a key (plain lock or semaphore, which limit, how many
 * live slots) is judged on the newest committed version of that one row, which ON DUPLICATE KEY
 * UPDATE and UPDATE lock and read; a read of other rows would see an older snapshot. The row's
 * expires_at is its last live slot's (or its release time), so to a plain lock's statements a
 * semaphore in use is a live row and an empty one a lapsed row; lock_id and owner are '' (no lock id
 * ever matches). A slot whose expiry has passed counts as free; a grant reuses its position (or
 * appends while none is free), a release removes the slot, so the array never outgrows the limit.
 *
 * Every expression gives the same result whether it sees the row before or after the statement's
 * other assignments: MySQL assigns left to right in a single-table UPDATE (and ON DUPLICATE KEY
 * UPDATE), MariaDB too unless sql_mode has SIMULTANEOUS_ASSIGNMENT. So the take's columns are guarded by "there was room, or the row's token is
 * this take's reservation now" (no older token can equal the newest reservation), expires_at and
 * slots, which decide "room", come last, and expiries are computed from the other slots plus this
 * one's new value.
 *
 * Only JSON functions both servers have: JSON_TABLE (MySQL 8.0.4+, MariaDB 10.6+), JSON_OBJECT,
 * JSON_SET, JSON_REMOVE, JSON_ARRAY. No JSON_ARRAYAGG (MariaDB's is cut at group_concat_max_len)
 * and no ->> (MariaDB lacks it).
 */
export function slotStatements(t: TableNames): SlotStatements {
  const row = t.locks;
  const room = `(${row}.slot_limit = a.slot_limit AND ${liveCount(`${row}.slots`)} < a.slot_limit)`;
  const mineLive = `s.lock_id = ? AND ${LIVE}`;
  return {
    take: takeStatement(t, ['? AS slot_limit'], room),

    // Single-table UPDATEs with their parameters repeated: a joined table of them costs more (~0.2 ms).
    extend: `UPDATE ${row} SET slots = JSON_SET(${row}.slots, CONCAT(${pathOf(`${row}.slots`, mineLive)}, '.expires_ms'), ${NOW_MS} + ?),
  expires_at = ${fromMs(`(SELECT MAX(IF(s.lock_id = ?, ${NOW_MS} + ?, s.expires_ms)) FROM ${slotsOf(`${row}.slots`)} WHERE ${LIVE})`)}
WHERE \`key\` = ? AND slot_limit IS NOT NULL AND ${pathOf(`${row}.slots`, mineLive)} IS NOT NULL`,

    // A lapsed own slot is removed too (tidying). The row then lasts as long as its other live slots.
    release: `UPDATE ${row} SET expires_at = ${fromMs(`COALESCE((SELECT MAX(s.expires_ms) FROM ${slotsOf(`${row}.slots`)} WHERE ${LIVE} AND s.lock_id <> ?), ${NOW_MS})`)},
  slots = JSON_REMOVE(${row}.slots, ${pathOf(`${row}.slots`, 's.lock_id = ?')})
WHERE \`key\` = ? AND slot_limit IS NOT NULL AND ${pathOf(`${row}.slots`, 's.lock_id = ?')} IS NOT NULL`,

    liveSlots: `SELECT l.\`key\`, s.lock_id FROM ${row} AS l, ${slotsOf('l.slots')}
WHERE l.\`key\` IN (?) AND l.slot_limit IS NOT NULL AND l.expires_at > ${NOW} AND ${LIVE}`,
  };
}
