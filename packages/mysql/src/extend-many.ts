import { type ExtendItem, extendId } from '@holdfast/core/backend';
import { text } from './rows.js';
import type { Row, Run } from './sql-runner.js';
import { epochMs, NOW } from './statements.js';
import type { TableNames } from './table-names.js';

/** Rows per statement: a few hundred KB of SQL at most, far below max_allowed_packet. */
const MAX_ROWS = 1000;

/**
 * The asked extensions as a derived table: (k, id, ttl_us) rows joined by UNION ALL, which both
 * servers accept (MySQL 8's VALUES ROW(…) and MariaDB's VALUES (…) table constructors differ).
 */
const asked = (rows: number): string => `(SELECT ? AS k, ? AS id, ? AS ttl_us${' UNION ALL SELECT ?, ?, ?'.repeat(rows - 1)}) AS a`;

/**
 * Extends many plain locks, answering the new expiry of each still held by its `extendId` (what
 * core's ExtendBatcher sends to). Two statements
 * per MAX_ROWS, each row owner-checked: an UPDATE joined with the asked (key, lock id, ttl) rows that
 * only touches live rows carrying the asked lock id, then a read of which of them are live and ours
 * now, with their expiry (MySQL's UPDATE has no RETURNING). The read is
 * the truth: a row the UPDATE found lapsed can never be live and ours again, and one released by
 * force in between is lost either way. Rows are asked in key order, so that two batches lock shared
 * rows (a stale handle's and its successor's) in the same order.
 */
export async function extendMany(run: Run, t: TableNames, items: readonly ExtendItem[]): Promise<Map<string, Date>> {
  // A grant asked twice in one batch (a renewal and an explicit extend) is extended once, by the later ask.
  const latest = new Map(items.map((item) => [extendId(item.key, item.lockId), item]));
  const rows = [...latest.values()]
    .map((item) => ({ ...item, bytes: Buffer.from(item.key, 'utf8') }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes));
  const held = new Map<string, Date>();
  for (let i = 0; i < rows.length; i += MAX_ROWS) {
    const batch = rows.slice(i, i + MAX_ROWS);
    const values = batch.flatMap((row) => [row.bytes, row.lockId, row.ttlMs * 1000]);
    const join = `${t.locks} AS l JOIN ${asked(batch.length)} ON l.\`key\` = a.k AND l.lock_id = a.id`;
    await run(`UPDATE ${join} SET l.expires_at = ${NOW} + INTERVAL a.ttl_us MICROSECOND WHERE l.expires_at > ${NOW}`, values);
    const live = await run<Row[]>(
      `SELECT l.\`key\`, l.lock_id, ${epochMs('l.expires_at')} AS expires_ms FROM ${join} WHERE l.expires_at > ${NOW}`,
      values,
    );
    for (const row of live) held.set(extendId(text(row['key']), text(row['lock_id'])), new Date(Number(row['expires_ms'])));
  }
  return held;
}
