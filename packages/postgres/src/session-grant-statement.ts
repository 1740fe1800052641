import { READ_WRITE_LIMIT } from './mode-statements.js';
import { HELD_LOCKS, holds, recordsOf } from './session-records.js';
import type { TableNames } from './table-names.js';

/** How a session grant uses its key: as a plain lock, a read-write lock in one of its modes, or a semaphore's slot. */
export type SessionUse = 'plain' | 'shared' | 'exclusive' | 'slot';

/** What a grant statement answers: one row once the key's fence row exists, none before (run it again). */
export interface SessionGrantRow {
  /** Whether this connection took the advisory lock. */
  took: boolean;
  /** The grant's token when it took the lock (null only if the fence row vanished: never expected). */
  token: string | null;
  acquired_at: Date;
  pid: number;
  /** The advisory id taken (a slot's own), or tried; null when every slot was taken or the key is in use otherwise. */
  lock: string | null;
  /** When not taken, the advisory id worth waiting on: the oldest live slot's for a semaphore, else null (the key's). */
  wait_lock: string | null;
  /**
   * When not taken because a live holder uses the key otherwise, how (rows.ts's in-use encoding: 0
   * a plain lock, N a semaphore of limit N, READ_WRITE_LIMIT a read-write lock); else null.
   */
  other_use: number | null;
}

/**
 * Which use a record g, or the request ($7, $8), stands for, in rows.ts's in-use encoding (a
 * semaphore's limit is part of its use): a conflict is a live record of another one.
 */
const USE_OF_RECORD = `CASE WHEN g ? 'mode' THEN ${READ_WRITE_LIMIT} WHEN g ? 'slot' THEN (g->>'limit')::int ELSE 0 END`;
const USE_OF_REQUEST = `CASE $7::text WHEN 'plain' THEN 0 WHEN 'slot' THEN $8::int ELSE ${READ_WRITE_LIMIT} END`;
/**
 * The advisory id to try: the key's own, or for a slot the lowest one no live record holds (slot i
 * is $1 + i, $1 the semaphore's base id). The records are complete while the fence row is locked,
 * so one try suffices: it fails only for a holder that is just letting go or never recorded itself.
 */
const PICK = `SELECT NULL::int AS slot, $1::bigint AS lock WHERE $7::text <> 'slot'
    UNION ALL (SELECT i, $1::bigint + i FROM generate_series(0, coalesce($8::int, 0) - 1) AS i WHERE $7::text = 'slot'
      EXCEPT SELECT (g->>'slot')::int, $1::bigint + (g->>'slot')::int FROM jsonb_array_elements(seen.live) AS g WHERE g ? 'slot'
      ORDER BY 1 LIMIT 1)`;

/**
 * The grant of every session use, on the holder's own connection. $1 lock, $2 key, $3 lock id, $4
 * owner, $5 reason, $6 ttl ms, $7 use (SessionUse), $8 a semaphore's limit → SessionGrantRow. $1 is
 * the key's advisory id, or a semaphore's base id (slot i takes $1 + i, advisory-key.ts).
 *
 * The order is the point. The key's fence row is locked FIRST (FOR NO KEY UPDATE, which returns its
 * newest committed version), and only then are pg_locks read and the advisory lock tried, and the
 * record written before the lock on the row is let go at commit. So grants of one key take turns,
 * and each one sees every record of the grants before it together with their locks: a plain lock
 * and a read-write lock racing for a fresh key cannot both miss each other, and the loser is told
 * LockConflictError, not busy. The advisory locks exclude by themselves (plain and writer take the
 * key's id exclusively, readers shared); for those the records only tell the uses apart and name
 * the holders. A semaphore's slots have ids of their own: for them the records, judged under this
 * row lock, are what keeps a plain lock, a read-write lock and other limits off the key.
 *
 * pg_locks is read in a scalar subquery of the locked row's projection, which runs only once that
 * row is locked: read before it, a grant that took its lock meanwhile would have a record and no lock
 * in view, and would be pruned. Records whose holder no longer holds its lock are dropped; this
 * connection holds nothing yet when they are judged, so a record of its own server process (a
 * reused connection, a reused pid) is dropped too and never counted twice. A key never seen has no
 * fence row to lock: the statement inserts it (ON CONFLICT DO NOTHING) and answers no row, and the
 * caller runs it again.
 */
export function sessionGrantStatement(t: TableNames): string {
  const record = (token: string): string => `jsonb_build_object('lock_id', $3::text, 'owner', $4::text, 'reason', $5::text,
      'token', ${token}, 'acquired_at', now(), 'pid', pg_backend_pid(), 'lock', got.lock)`;
  const use = `CASE WHEN $7::text = 'slot' THEN jsonb_build_object('slot', got.slot, 'limit', $8::int) ELSE jsonb_build_object('mode', $7::text) END`;
  return `WITH ensured AS (
  INSERT INTO ${t.fences} (key, token) VALUES ($2, 0) ON CONFLICT (key) DO NOTHING
), fence AS MATERIALIZED (
  SELECT f.session FROM ${t.fences} AS f WHERE f.key = $2 FOR NO KEY UPDATE
), seen AS MATERIALIZED (
  SELECT (SELECT coalesce(jsonb_agg(g ORDER BY (g->>'token')::bigint), '[]'::jsonb) FROM ${recordsOf('fence.session')}
      WHERE EXISTS (SELECT 1 FROM (${HELD_LOCKS}) AS held WHERE ${holds('held')})
    ) AS live FROM fence
), got AS MATERIALIZED (
  SELECT seen.live, other.use AS other_use, pick.slot, pick.lock,
      CASE WHEN other.use IS NOT NULL OR pick.lock IS NULL THEN false
        WHEN $7::text = 'shared' THEN pg_try_advisory_lock_shared(pick.lock) ELSE pg_try_advisory_lock(pick.lock) END AS ok
    FROM seen CROSS JOIN LATERAL (SELECT min(${USE_OF_RECORD}) AS use FROM jsonb_array_elements(seen.live) AS g
      WHERE ${USE_OF_RECORD} <> ${USE_OF_REQUEST}) AS other
    LEFT JOIN LATERAL (${PICK}) AS pick ON other.use IS NULL
), bumped AS (
  UPDATE ${t.fences} AS f SET token = f.token + 1, session = CASE WHEN $7::text = 'plain' THEN ${record('f.token + 1')}
      ELSE jsonb_build_object('grants', got.live || jsonb_build_array(${record('f.token + 1')} || ${use})) END
    FROM got WHERE f.key = $2 AND got.ok
  RETURNING f.token
)
SELECT got.ok AS took, bumped.token, now() AS acquired_at, pg_backend_pid() AS pid, got.lock, got.other_use,
    (SELECT g->>'lock' FROM jsonb_array_elements(got.live) AS g WHERE g ? 'slot' ORDER BY (g->>'token')::bigint LIMIT 1) AS wait_lock,
    CASE WHEN got.ok THEN set_config('idle_session_timeout', $6::int::text, false) END AS ttl
  FROM got LEFT JOIN bumped ON true`;
}
