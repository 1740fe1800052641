import type { TableNames } from './table-names.js';

/** The SQL of semaphores, built once per table. Times are the server's: now() against each slot's expiry. */
export interface SlotStatements {
  /**
   * $1 key, $2 lock id, $3 owner, $4 reason, $5 ttl ms, $6 limit → one row: granted + the slot's lease,
   * or busy + the time until the first slot runs out and, when the key is in use, its limit (0: a plain lock).
   */
  readonly grant: string;
  /** $1 keys[], $2 lock ids[], $3 ttls[] → (key, lock_id, expires_at) of each slot still held. */
  readonly extendMany: string;
  /** $1 key, $2 lock id → a row when the slot was held; NOTIFYs the release. */
  readonly release: string;
  /** $1 key, $2 lock id → a row when held. */
  readonly isHeld: string;
  /** $1 key → the live slots, oldest grant first. */
  readonly holders: string;
}

// A slot is a jsonb object {lock_id, owner, reason, token, acquired_at, expires_at} in the row's slots array.
// A read-write lock's holders share the shape, with a 'mode' besides (mode-statements.ts).
export const LIVE = `(e->>'expires_at')::timestamptz > now()`;
export const BY_TOKEN = `(e->>'token')::bigint`;
export const slotsOf = (row: string): string => `jsonb_array_elements(coalesce(${row}.slots, '[]'::jsonb)) AS e`;
const liveCount = (row: string): string => `(SELECT count(*) FROM ${slotsOf(row)} WHERE ${LIVE})`;
export const liveSlots = (row: string): string =>
  `(SELECT coalesce(jsonb_agg(e ORDER BY ${BY_TOKEN}), '[]'::jsonb) FROM ${slotsOf(row)} WHERE ${LIVE})`;
export const lastExpiry = (row: string): string => `(SELECT max((e->>'expires_at')::timestamptz) FROM ${slotsOf(row)} WHERE ${LIVE})`;
export const firstExpiry = (row: string): string => `(SELECT min((e->>'expires_at')::timestamptz) FROM ${slotsOf(row)} WHERE ${LIVE})`;
/** (slots, expires_at) after keeping the live slots that pass `filter` (each as `slot`): the row's lease is its last slot's. */
const rewrite = (row: string, slot: string, filter: string, join = ''): string =>
  `(SELECT coalesce(jsonb_agg(s.slot ORDER BY (s.slot->>'token')::bigint), '[]'::jsonb), coalesce(max((s.slot->>'expires_at')::timestamptz), now())
    FROM (SELECT ${slot} AS slot FROM ${slotsOf(row)} ${join} WHERE ${LIVE} AND ${filter}) AS s)`;
export const expiryIn = (ttl: string): string => `now() + ${ttl}::float8 * interval '1 millisecond'`;

/**
 * A semaphore is ONE row of the locks table: slot_limit and its holders in a jsonb array. So every
 * decision about a key (plain lock or semaphore, which limit, how many live slots) is judged on the
 * newest committed version of one row: ON CONFLICT ... WHERE and UPDATE re-check the row they lock,
 * where a subquery on other rows would see the statement's older snapshot. expires_at is the last
 * live slot's expiry, so a plain lock's grant sees a semaphore in use as a live row. Slots take their
 * tokens from the key's fence counter, like plain grants; expired slots are dropped at every write.
 * A read-write lock's row is the same with slot_limit READ_WRITE_LIMIT (mode-statements.ts), so
 * extendMany, release and isHeld (by lock id) serve its grants too; holders lists semaphores only.
 */
export function slotStatements(t: TableNames): SlotStatements {
  const mySlot = `e->>'lock_id' = $2`;
  return {
    grant: `WITH fence AS (
  INSERT INTO ${t.fences} AS f (key, token) VALUES ($1, 1)
  ON CONFLICT (key) DO UPDATE SET token = f.token + 1
    WHERE NOT EXISTS (SELECT 1 FROM ${t.locks} AS live WHERE live.key = $1 AND live.expires_at > now()
      AND (live.slot_limit IS DISTINCT FROM $6::int OR ${liveCount('live')} >= $6::int))
  RETURNING f.token
), mine AS (
  SELECT fence.token, now() AS acquired_at, ${expiryIn('$5')} AS expires_at FROM fence
), taken AS (
  INSERT INTO ${t.locks} AS l (key, lock_id, owner, reason, token, acquired_at, expires_at, slot_limit, slots)
  SELECT $1, '', '', NULL, mine.token, mine.acquired_at, mine.expires_at, $6::int, jsonb_build_array(jsonb_build_object(
    'lock_id', $2::text, 'owner', $3::text, 'reason', $4::text, 'token', mine.token, 'acquired_at', mine.acquired_at, 'expires_at', mine.expires_at))
  FROM mine
  ON CONFLICT (key) DO UPDATE SET lock_id = '', owner = '', reason = NULL, token = excluded.token, acquired_at = excluded.acquired_at,
    slot_limit = excluded.slot_limit, slots = ${liveSlots('l')} || excluded.slots,
    expires_at = greatest(${lastExpiry('l')}, excluded.expires_at)
    WHERE l.expires_at <= now() OR (l.slot_limit = excluded.slot_limit AND ${liveCount('l')} < excluded.slot_limit)
  RETURNING l.key
)
SELECT true AS granted, mine.token, mine.acquired_at, mine.expires_at, NULL::float8 AS remaining_ms, NULL::int AS in_use_limit
  FROM taken, mine
UNION ALL
SELECT false, NULL, NULL, NULL, extract(epoch FROM (coalesce(${firstExpiry('h')}, h.expires_at) - now())) * 1000,
    CASE WHEN h.expires_at > now() THEN coalesce(h.slot_limit, 0) END
  FROM ${t.locks} AS h WHERE h.key = $1 AND NOT EXISTS (SELECT 1 FROM taken)`,

    // A slot asked for twice in one batch (a renewal and an explicit extend) is extended once, by the later ask.
    extendMany: `WITH asked AS (
  SELECT DISTINCT ON (key, lock_id) key, lock_id, ttl
    FROM unnest($1::text[], $2::text[], $3::float8[]) WITH ORDINALITY AS a(key, lock_id, ttl, n) ORDER BY key, lock_id, n DESC
),
renewed AS (
  UPDATE ${t.locks} AS l SET (slots, expires_at) = ${rewrite(
    'l',
    `CASE WHEN a.ttl IS NULL THEN e ELSE e || jsonb_build_object('expires_at', ${expiryIn('a.ttl')}) END`,
    'true',
    `LEFT JOIN asked AS a ON a.key = l.key AND a.lock_id = e->>'lock_id'`,
  )}
  WHERE l.key IN (SELECT key FROM asked) AND l.slot_limit IS NOT NULL
    AND EXISTS (SELECT 1 FROM ${slotsOf('l')} JOIN asked AS a ON a.key = l.key AND a.lock_id = e->>'lock_id' WHERE ${LIVE})
  RETURNING l.key, l.slots
)
SELECT r.key, e->>'lock_id' AS lock_id, (e->>'expires_at')::timestamptz AS expires_at
  FROM renewed AS r CROSS JOIN LATERAL ${slotsOf('r')} JOIN asked AS a ON a.key = r.key AND a.lock_id = e->>'lock_id'`,

    // Owner-checked by the slot's lock id; the row stays (an empty semaphore whose lease is over).
    release: `WITH gone AS (
  UPDATE ${t.locks} AS l SET (slots, expires_at) = ${rewrite('l', 'e', `NOT (${mySlot})`)}
  WHERE l.key = $1 AND l.slot_limit IS NOT NULL AND EXISTS (SELECT 1 FROM ${slotsOf('l')} WHERE ${mySlot} AND ${LIVE})
  RETURNING l.key
)
SELECT pg_notify('${t.channel}', gone.key) FROM gone`,

    isHeld: `SELECT 1 FROM ${t.locks} AS l WHERE l.key = $1 AND l.slot_limit IS NOT NULL
  AND EXISTS (SELECT 1 FROM ${slotsOf('l')} WHERE ${mySlot} AND ${LIVE})`,

    holders: `SELECT l.key, e->>'owner' AS owner, e->>'reason' AS reason, e->>'token' AS token,
    (e->>'acquired_at')::timestamptz AS acquired_at, (e->>'expires_at')::timestamptz AS expires_at, e->>'lock_id' AS lock_id, l.slot_limit
  FROM ${t.locks} AS l CROSS JOIN LATERAL ${slotsOf('l')}
  WHERE l.key = $1 AND l.slot_limit > 0 AND ${LIVE} ORDER BY ${BY_TOKEN}`,
  };
}
