import type { TableNames } from './table-names.js';

/** The SQL of session mode, built once per table. `$lock` is the key's advisory id (advisory-key.ts). */
export interface SessionStatements {
  /**
   * On the holder's own connection. $1 lock, $2 key, $3 lock id, $4 owner, $5 reason, $6 ttl ms → a
   * row (token, acquired_at, pid) when the lock was free: it is then held by this connection, the
   * key's fence counter bumped and its holder recorded, and the connection's idle_session_timeout set.
   */
  readonly grant: string;
  /** $1 lock, $2 pid → me (this connection's server process) and held (whether process $2 holds the lock). */
  readonly check: string;
  /** check, after setting this connection's idle_session_timeout to $3 ms (the holder's new TTL). */
  readonly extend: string;
  /** On the holder's connection. $1 lock → unlocked; the connection's idle_session_timeout back to none. */
  readonly release: string;
  /** On a connection of its own. $1 lock, $2 wait ms → returns once the holder lets go, or fails with lock_not_available. */
  readonly wait: string;
  /** $1 key → its holder, if a live session holds it. */
  readonly inspect: string;
  /** $1 LIKE pattern of the prefix → every key under it that a live session holds. */
  readonly list: string;
  /** $1 lock → freed: ends the server process holding it (the holder's connection). */
  readonly forceRelease: string;
  /** $1 key, $2 lock id → ends the server process holding the key if that grant is request $2's. */
  readonly abandon: string;
}

/**
 * Advisory locks held in this database: a bigint id shows as classid (its high 32 bits) and objid
 * (its low 32 bits), both unsigned; shifting them back together gives the signed id again.
 */
const HELD = `held AS (
  SELECT pl.pid, (pl.classid::bigint << 32) | pl.objid::bigint AS lock FROM pg_locks AS pl
   WHERE pl.locktype = 'advisory' AND pl.objsubid = 1 AND pl.mode = 'ExclusiveLock' AND pl.granted
     AND pl.database = (SELECT oid FROM pg_database WHERE datname = current_database())
)`;
/**
 * Session mode: the lock is PostgreSQL's own advisory lock, held by one dedicated connection per
 * lock and freed by the server the moment that connection ends. The connection's
 * idle_session_timeout is the lock's TTL: a holder that stops talking (a paused process, a cut
 * network) loses its session, hence its lock, after it; the backend's heartbeat keeps it busy.
 * Tokens come from the same fence counter as lease mode, bumped while the lock is already held.
 */
export function sessionStatements(t: TableNames): SessionStatements {
  const holder = `jsonb_build_object('lock_id', $3::text, 'owner', $4::text, 'reason', $5::text, 'token', 1,
    'acquired_at', now(), 'pid', pg_backend_pid(), 'lock', $1::bigint)`;
  const info = `f.key, f.session->>'owner' AS owner, f.session->>'reason' AS reason, f.session->>'token' AS token,
    (f.session->>'acquired_at')::timestamptz AS acquired_at, NULL::timestamptz AS expires_at, f.session->>'lock_id' AS lock_id`;
  const heldBy = (f: string): string =>
    `JOIN held ON held.pid = (${f}.session->>'pid')::int AND held.lock = (${f}.session->>'lock')::bigint`;
  const check = `SELECT pg_backend_pid() AS me, EXISTS (SELECT 1 FROM held WHERE held.pid = $2 AND held.lock = $1::bigint) AS held`;
  return {
    grant: `WITH got AS (SELECT pg_try_advisory_lock($1::bigint) AS ok), bumped AS (
  INSERT INTO ${t.fences} AS f (key, token, session) SELECT $2, 1, ${holder} FROM got WHERE got.ok
  ON CONFLICT (key) DO UPDATE SET token = f.token + 1, session = excluded.session || jsonb_build_object('token', f.token + 1)
  RETURNING f.token
)
SELECT token, now() AS acquired_at, pg_backend_pid() AS pid, set_config('idle_session_timeout', $6::int::text, false) FROM bumped`,

    check: `WITH ${HELD} ${check}`,

    extend: `WITH ${HELD}, ttl AS (SELECT set_config('idle_session_timeout', $3::int::text, false)) ${check} FROM ttl`,

    release: `SELECT pg_advisory_unlock($1::bigint) AS unlocked, set_config('idle_session_timeout', '0', false)`,

    // The shared request queues behind the holder's exclusive lock and is granted the moment it goes,
    // whether released or its session ended (a crash); the transaction then ends and lets go at once.
    wait: `SELECT pg_advisory_xact_lock_shared($1::bigint) FROM (SELECT set_config('lock_timeout', $2::int::text, true)) AS bound`,

    inspect: `WITH ${HELD} SELECT ${info} FROM ${t.fences} AS f ${heldBy('f')} WHERE f.key = $1`,

    list: `WITH ${HELD} SELECT ${info} FROM ${t.fences} AS f ${heldBy('f')} WHERE f.key LIKE $1 ORDER BY f.key`,

    // pg_terminate_backend waits up to a second for the process to end, so the lock is free on return.
    forceRelease: `WITH ${HELD} SELECT bool_or(pg_terminate_backend(held.pid, 1000)) AS freed FROM held WHERE held.lock = $1::bigint`,

    abandon: `WITH ${HELD} SELECT pg_terminate_backend(held.pid, 1000) FROM ${t.fences} AS f ${heldBy('f')}
  WHERE f.key = $1 AND f.session->>'lock_id' = $2`,
  };
}
