import { BY_TOKEN, expiryIn, firstExpiry, LIVE, lastExpiry, liveSlots, slotsOf } from './slot-statements.js';
import type { TableNames } from './table-names.js';

/**
 * The slot_limit that marks a read-write lock's row. Semaphores have limits from 1 and plain locks
 * none (NULL), so the one column tells the three uses of a key apart, and a grant of one use finds
 * the others' live rows in its way.
 */
export const READ_WRITE_LIMIT = -1;

/** The SQL of read-write locks, built once per table (extend, release and isHeld are the slots': slot-statements.ts). */
export interface ModeStatements {
  /**
   * $1 key, $2 lock id, $3 owner, $4 reason, $5 ttl ms, $6 mode ('shared' | 'exclusive') → one row:
   * granted + the grant's lease, or busy + the time until the first holder's lease ends and, when the
   * key is in use, how (0 a plain lock, N a semaphore of limit N, READ_WRITE_LIMIT a read-write lock).
   */
  readonly grant: string;
  /** $1 key → the live grants, oldest first, each with its mode. */
  readonly holders: string;
}

/**
 * A read-write lock is ONE row of the locks table, like a semaphore: slot_limit READ_WRITE_LIMIT
 * and its holders in the slots array, each {lock_id, owner, reason, token, acquired_at, expires_at,
 * mode}. Whether a grant fits (a reader: no live writer; a writer: no live holder at all) is judged
 * by ON CONFLICT ... WHERE on the newest committed version of that row, which it locks, never on
 * the statement's snapshot; so a reader and a writer that race both see the other's commit, and
 * only one of them can add itself. A lock id already among the holders is in the way too: a
 * statement that ran twice grants once. Tokens come from the key's fence counter, bumped first and
 * only when the key looks free: its row lock orders grants of both modes and plain locks, so tokens
 * rise in the order grants commit (a bump whose take then fails leaves a gap, never a reuse).
 */
export function modeStatements(t: TableNames): ModeStatements {
  const inTheWay = (row: string): string =>
    `EXISTS (SELECT 1 FROM ${slotsOf(row)} WHERE ${LIVE} AND ($6::text = 'exclusive' OR e->>'mode' = 'exclusive' OR e->>'lock_id' = $2))`;
  return {
    grant: `WITH fence AS (
  INSERT INTO ${t.fences} AS f (key, token) VALUES ($1, 1)
  ON CONFLICT (key) DO UPDATE SET token = f.token + 1
    WHERE NOT EXISTS (SELECT 1 FROM ${t.locks} AS live WHERE live.key = $1 AND live.expires_at > now()
      AND (live.slot_limit IS DISTINCT FROM ${READ_WRITE_LIMIT} OR ${inTheWay('live')}))
  RETURNING f.token
), mine AS (
  SELECT fence.token, now() AS acquired_at, ${expiryIn('$5')} AS expires_at FROM fence
), taken AS (
  INSERT INTO ${t.locks} AS l (key, lock_id, owner, reason, token, acquired_at, expires_at, slot_limit, slots)
  SELECT $1, '', '', NULL, mine.token, mine.acquired_at, mine.expires_at, ${READ_WRITE_LIMIT}, jsonb_build_array(jsonb_build_object(
    'lock_id', $2::text, 'owner', $3::text, 'reason', $4::text, 'token', mine.token, 'acquired_at', mine.acquired_at,
    'expires_at', mine.expires_at, 'mode', $6::text))
  FROM mine
  ON CONFLICT (key) DO UPDATE SET lock_id = '', owner = '', reason = NULL, token = excluded.token, acquired_at = excluded.acquired_at,
    slot_limit = excluded.slot_limit, slots = ${liveSlots('l')} || excluded.slots,
    expires_at = greatest(${lastExpiry('l')}, excluded.expires_at)
    WHERE l.expires_at <= now() OR (l.slot_limit = ${READ_WRITE_LIMIT} AND NOT ${inTheWay('l')})
  RETURNING l.key
)
SELECT true AS granted, mine.token, mine.acquired_at, mine.expires_at, NULL::float8 AS remaining_ms, NULL::int AS in_use_limit
  FROM taken, mine
UNION ALL
SELECT false, NULL, NULL, NULL, extract(epoch FROM (coalesce(${firstExpiry('h')}, h.expires_at) - now())) * 1000,
    CASE WHEN h.expires_at > now() THEN coalesce(h.slot_limit, 0) END
  FROM ${t.locks} AS h WHERE h.key = $1 AND NOT EXISTS (SELECT 1 FROM taken)`,

    holders: `SELECT l.key, e->>'owner' AS owner, e->>'reason' AS reason, e->>'token' AS token,
    (e->>'acquired_at')::timestamptz AS acquired_at, (e->>'expires_at')::timestamptz AS expires_at, e->>'lock_id' AS lock_id, e->>'mode' AS mode
  FROM ${t.locks} AS l CROSS JOIN LATERAL ${slotsOf('l')}
  WHERE l.key = $1 AND l.slot_limit = ${READ_WRITE_LIMIT} AND ${LIVE} ORDER BY ${BY_TOKEN}`,
  };
}
