import { HELD_LOCKS, holds, recordsOf } from './session-records.js';
import type { TableNames } from './table-names.js';

/** How a session grant uses its key: as a plain lock, or as a read-write lock in one of its modes. */
export type SessionUse = 'plain' | 'shared' | 'exclusive';

/** What a grant statement answers: one row once the key's fence row exists, none before (run it again). */
export interface SessionGrantRow {
  /** Whether this connection took the advisory lock. */
  took: boolean;
  /** The grant's token when it took the lock (null only if the fence row vanished: never expected). */
  token: string | null;
  acquired_at: Date;
  pid: number;
  /** When not taken because a live holder uses the key otherwise: 'plain' or 'read-write'; else null. */
  other_use: string | null;
}

/** Which use a record g, or a request $7, stands for: a conflict is a live record of another one. */
const USE_OF_RECORD = `CASE WHEN g ? 'mode' THEN 'read-write' ELSE 'plain' END`;
const USE_OF_REQUEST = `CASE WHEN $7::text = 'plain' THEN 'plain' ELSE 'read-write' END`;

/**
 * The grant of every session use, on the holder's own connection. $1 lock, $2 key, $3 lock id, $4
 * owner, $5 reason, $6 ttl ms, $7 use (SessionUse) → SessionGrantRow.
 *
 * The order is the point. The key's fence row is locked FIRST (FOR NO KEY UPDATE, which returns its
 * newest committed version), and only then are pg_locks read and the advisory lock tried, and the
 * record written before the lock on the row is let go at commit. So grants of one key take turns,
 * and each one sees every record of the grants before it together with their locks: a plain lock
 * and a read-write lock racing for a fresh key cannot both miss each other, and the loser is told
 * LockConflictError, not busy. The advisory locks exclude by themselves (plain and writer take the
 * key's id exclusively, readers shared); the records only tell the uses apart and name the holders.
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
      'token', ${token}, 'acquired_at', now(), 'pid', pg_backend_pid(), 'lock', $1::bigint)`;
  return `WITH ensured AS (
  INSERT INTO ${t.fences} (key, token) VALUES ($2, 0) ON CONFLICT (key) DO NOTHING
), fence AS MATERIALIZED (
  SELECT f.session FROM ${t.fences} AS f WHERE f.key = $2 FOR NO KEY UPDATE
), seen AS MATERIALIZED (
  SELECT (SELECT coalesce(jsonb_agg(g ORDER BY (g->>'token')::bigint), '[]'::jsonb) FROM ${recordsOf('fence.session')}
      WHERE EXISTS (SELECT 1 FROM (${HELD_LOCKS}) AS held WHERE ${holds('held')})
    ) AS live FROM fence
), got AS MATERIALIZED (
  SELECT seen.live, other.use AS other_use,
      CASE WHEN other.use IS NOT NULL THEN false
        WHEN $7::text = 'shared' THEN pg_try_advisory_lock_shared($1::bigint) ELSE pg_try_advisory_lock($1::bigint) END AS ok
    FROM seen CROSS JOIN LATERAL (SELECT min(${USE_OF_RECORD}) AS use FROM jsonb_array_elements(seen.live) AS g
      WHERE ${USE_OF_RECORD} <> ${USE_OF_REQUEST}) AS other
), bumped AS (
  UPDATE ${t.fences} AS f SET token = f.token + 1, session = CASE WHEN $7::text = 'plain' THEN ${record('f.token + 1')}
      ELSE jsonb_build_object('grants', got.live || jsonb_build_array(${record('f.token + 1')} || jsonb_build_object('mode', $7::text))) END
    FROM got WHERE f.key = $2 AND got.ok
  RETURNING f.token
)
SELECT got.ok AS took, bumped.token, now() AS acquired_at, pg_backend_pid() AS pid, got.other_use,
    CASE WHEN got.ok THEN set_config('idle_session_timeout', $6::int::text, false) END AS ttl
  FROM got LEFT JOIN bumped ON true`;
}
