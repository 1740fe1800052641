import { LIVE, slotsOf, takeStatement } from './slot-statements.js';
import type { TableNames } from './table-names.js';

/**
 * The slot_limit that marks a read-write lock's row. Semaphores have limits from 1 and plain locks
 * none (NULL), so the one column tells the three uses of a key apart.
 */
export const READ_WRITE_LIMIT = -1;

/**
 * [lock id, owner, reason, ttl ms, mode, key, reserved] → takes a read-write grant if the key is free
 * or fits it. A read-write lock is ONE row of the locks table, like a semaphore (slot-statements.ts):
 * slot_limit READ_WRITE_LIMIT, its grants in the slots array with their mode. A grant fits when no
 * live grant is in its way (a writer: any; a reader: a writer, or its own lock id, so that a statement
 * run twice grants once), judged on the newest committed row that ON DUPLICATE KEY UPDATE locks and
 * reads, never a snapshot: a reader and a writer that race both see the other's commit, and only one
 * adds itself. Extend, release and the live-slot watch are the semaphore's statements, by lock id.
 */
export function modeTakeStatement(t: TableNames): string {
  const row = t.locks;
  const inTheWay = `EXISTS (SELECT 1 FROM ${slotsOf(`${row}.slots`)} WHERE ${LIVE}
    AND (a.holder_mode = 'exclusive' OR s.holder_mode = 'exclusive' OR s.lock_id = a.lock_id))`;
  const room = `(${row}.slot_limit = a.slot_limit AND NOT ${inTheWay})`;
  return takeStatement(t, ['? AS holder_mode', `${READ_WRITE_LIMIT} AS slot_limit`], room, `, 'mode', a.holder_mode`);
}
