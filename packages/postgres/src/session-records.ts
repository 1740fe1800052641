/**
 * The SQL fragments that read session mode's holder records. A key's fence row records its holders
 * in the `session` column: a plain lock as one object {lock_id, owner, reason, token, acquired_at,
 * pid, lock} (the shape older versions wrote and documented), a read-write lock or a semaphore as
 * {"grants": [...]}, one such object per grant with a `mode` besides, or a `slot` and the `limit`
 * (then `lock` is the slot's own advisory id). A record names the server process (`pid`) of the
 * connection that took the advisory lock `lock`, and counts only while that process holds it: the
 * server frees a dead holder's lock, so its record is ignored at once and dropped by the next grant.
 */

/**
 * Advisory locks held in this database: a bigint id shows as classid (its high 32 bits) and objid
 * (its low 32 bits), both unsigned; shifting them back together gives the signed id again. `mode`
 * is ExclusiveLock (a plain lock, a writer) or ShareLock (a reader).
 */
export const HELD_LOCKS = `SELECT pl.pid, (pl.classid::bigint << 32) | pl.objid::bigint AS lock, pl.mode FROM pg_locks AS pl
   WHERE pl.locktype = 'advisory' AND pl.objsubid = 1 AND pl.granted
     AND pl.database = (SELECT oid FROM pg_database WHERE datname = current_database())`;

/** HELD_LOCKS as a CTE named `held`, for statements whose reading of pg_locks may come at any point. */
export const HELD = `held AS (${HELD_LOCKS})`;

/** The records of a `session` value, one jsonb object each (named `g`), for a FROM list. */
export const recordsOf = (session: string): string =>
  `jsonb_array_elements(CASE WHEN jsonb_typeof(${session}->'grants') = 'array' THEN ${session}->'grants'
    WHEN jsonb_typeof(${session}) = 'object' THEN jsonb_build_array(${session}) ELSE '[]'::jsonb END) AS g`;

/** The lock mode a record's holder must hold: a reader's is shared, a plain lock's and a writer's exclusive. */
const MODE_OF_RECORD = `CASE WHEN g->>'mode' = 'shared' THEN 'ShareLock' ELSE 'ExclusiveLock' END`;

/** Join condition: `held` (a row of HELD_LOCKS) is record g's holder still holding its lock. */
export const holds = (held: string): string =>
  `${held}.pid = (g->>'pid')::int AND ${held}.lock = (g->>'lock')::bigint AND ${held}.mode = ${MODE_OF_RECORD}`;

/** Record g is a read-write grant (it has a mode). */
export const IS_MODE_GRANT = `g ? 'mode'`;
/** Record g is a semaphore's slot. */
export const IS_SLOT = `g ? 'slot'`;
/** Record g is a plain lock's: neither. */
export const IS_PLAIN = `NOT (g ? 'mode' OR g ? 'slot')`;

/** The LockInfo columns of record g of fence row `f` (pg's LockRow). */
export const RECORD_INFO = `f.key, g->>'owner' AS owner, g->>'reason' AS reason, g->>'token' AS token,
    (g->>'acquired_at')::timestamptz AS acquired_at, NULL::timestamptz AS expires_at, g->>'lock_id' AS lock_id`;
