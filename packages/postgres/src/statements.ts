import type { TableNames } from './table-names.js';

/** The SQL the backend sends, built once per table. Times are the server's: now() and the stored expiry. */
export interface Statements {
  /**
   * $1 key, $2 lock id, $3 owner, $4 reason, $5 ttl ms → one row: granted + lease, or busy + the holder's
   * remaining ms and how the key is in use: 0 a plain lock, N a semaphore of limit N (a conflict).
   */
  readonly grant: string;
  /** $1 keys[], $2 lock ids[], $3 ttls[] → (key, lock_id, expires_at) of each grant still held. */
  readonly extendMany: string;
  /** $1 key, $2 lock id → live: whether it was still held; NOTIFYs the release. */
  readonly release: string;
  /** $1 key, $2 lock id → a row when held. */
  readonly isHeld: string;
  /** $1 key → the live plain lock (a semaphore's holders come from the slot statements). */
  readonly inspect: string;
  /** $1 LIKE pattern of the prefix → every live lock under it. */
  readonly list: string;
  /** $1 key → live: whether a live lock or semaphore was there; NOTIFYs the release, with the token bound when live. */
  readonly forceRelease: string;
}

const INFO_COLUMNS = 'key, owner, reason, token, acquired_at, expires_at, lock_id';

/**
 * The grant is one statement, so one transaction. The fence counter is bumped first and only when the
 * key looks free: its row lock orders competing grants, so tokens rise in the order grants commit,
 * and a busy answer writes nothing. The lock row is then taken only if its lease has run out
 * (ON CONFLICT judges the newest committed row, not this statement's snapshot), so a bumped counter
 * may go unused (a gap), never reused. A busy answer reports the holder's remaining time as a wake hint.
 */
export function statements(t: TableNames): Statements {
  const notify = `pg_notify('${t.channel}', gone.key)`;
  return {
    grant: `WITH fence AS (
  INSERT INTO ${t.fences} AS f (key, token) VALUES ($1, 1)
  ON CONFLICT (key) DO UPDATE SET token = f.token + 1
    WHERE NOT EXISTS (SELECT 1 FROM ${t.locks} AS live WHERE live.key = $1 AND live.expires_at > now())
  RETURNING f.token
), taken AS (
  INSERT INTO ${t.locks} AS l (key, lock_id, owner, reason, token, acquired_at, expires_at)
  SELECT $1, $2, $3, $4, fence.token, now(), now() + $5::float8 * interval '1 millisecond' FROM fence
  ON CONFLICT (key) DO UPDATE SET lock_id = excluded.lock_id, owner = excluded.owner, reason = excluded.reason,
    token = excluded.token, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, slot_limit = NULL, slots = NULL
    WHERE l.expires_at <= now()
  RETURNING l.token, l.acquired_at, l.expires_at
)
SELECT true AS granted, token, acquired_at, expires_at, NULL::float8 AS remaining_ms, NULL::int AS in_use_limit FROM taken
UNION ALL
SELECT false, NULL, NULL, NULL, extract(epoch FROM (h.expires_at - now())) * 1000, CASE WHEN h.expires_at > now() THEN coalesce(h.slot_limit, 0) END
  FROM ${t.locks} AS h WHERE h.key = $1 AND NOT EXISTS (SELECT 1 FROM taken)`,

    extendMany: `UPDATE ${t.locks} AS l SET expires_at = now() + b.ttl * interval '1 millisecond'
  FROM unnest($1::text[], $2::text[], $3::float8[]) AS b(key, lock_id, ttl)
  WHERE l.key = b.key AND l.lock_id = b.lock_id AND l.expires_at > now()
  RETURNING l.key, l.lock_id, l.expires_at`,

    // An own row whose lease ran out is deleted too (tidying), but reported as not held.
    release: `WITH gone AS (DELETE FROM ${t.locks} WHERE key = $1 AND lock_id = $2 RETURNING key, expires_at > now() AS live)
SELECT live, ${notify} FROM gone`,

    isHeld: `SELECT 1 FROM ${t.locks} WHERE key = $1 AND lock_id = $2 AND expires_at > now()`,

    inspect: `SELECT ${INFO_COLUMNS} FROM ${t.locks} WHERE key = $1 AND expires_at > now() AND slot_limit IS NULL`,

    list: `SELECT ${INFO_COLUMNS} FROM ${t.locks} WHERE key LIKE $1 AND expires_at > now() AND slot_limit IS NULL ORDER BY key`,

    // A plain lock or every slot of a semaphore. The NOTIFY carries the highest token freed, so that
    // each holder of the key can tell whether it was one of them (forcedReleasePayload).
    forceRelease: `WITH gone AS (DELETE FROM ${t.locks} WHERE key = $1 RETURNING key, token, expires_at > now() AS live)
SELECT live, pg_notify('${t.channel}', CASE WHEN live THEN gone.key || chr(1) || gone.token ELSE gone.key END) FROM gone`,
  };
}

/** A LIKE pattern matching every key that starts with `prefix` (its %, _ and \\ taken literally). */
export function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
