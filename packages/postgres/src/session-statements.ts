import { sessionGrantStatement } from './session-grant-statement.js';
import { HELD, holds, IS_MODE_GRANT, IS_PLAIN, IS_SLOT, RECORD_INFO, recordsOf } from './session-records.js';
import type { TableNames } from './table-names.js';

/** The SQL of session mode, built once per table. `$lock` is the key's advisory id (advisory-key.ts). */
export interface SessionStatements {
  /**
   * On the holder's own connection, for a plain lock and both modes of a read-write lock
   * (session-grant-statement.ts): a SessionGrantRow, or no row for a key never seen (run it again).
   * When taken, the lock is held by this connection, the key's fence counter bumped and the grant
   * recorded, and the connection's idle_session_timeout set.
   */
  readonly grant: string;
  /** $1 lock, $2 pid → me (this connection's server process) and held (whether process $2 holds the lock). */
  readonly check: string;
  /** check, after setting this connection's idle_session_timeout to $3 ms (the holder's new TTL). */
  readonly extend: string;
  /** On the holder's connection. $1 lock → unlocked; the connection's idle_session_timeout back to none. */
  readonly release: string;
  /** release, of a reader's shared lock. */
  readonly releaseShared: string;
  /**
   * On a connection of its own. $1 lock, $2 wait ms → returns once no holder excludes a reader (a
   * plain lock's or a writer's holder let go), or fails with lock_not_available.
   */
  readonly wait: string;
  /** wait, for a writer: returns once nobody holds the lock at all (readers included). */
  readonly waitExclusive: string;
  /** $1 key → its holder, if a live session holds it. */
  readonly inspect: string;
  /** $1 LIKE pattern of the prefix → every key under it that a live session holds. */
  readonly list: string;
  /**
   * $1 lock, $2 key → freed: ends the server process of every holder (a plain lock's, a writer's,
   * each reader's, each slot's connection).
   */
  readonly forceRelease: string;
  /** $1 key, $2 lock id → ends the server process holding the key if that grant is request $2's. */
  readonly abandon: string;
  /** $1 key → its live read-write grants (LockRow and mode), oldest first. */
  readonly modeHolders: string;
  /** $1 key → its live semaphore slots (LockRow), oldest first. */
  readonly slotHolders: string;
}

/**
 * Session mode: the lock is PostgreSQL's own advisory lock, held by one dedicated connection per
 * lock and freed by the server the moment that connection ends. The connection's
 * idle_session_timeout is the lock's TTL: a holder that stops talking (a paused process, a cut
 * network) loses its session, hence its lock, after it; the backend's heartbeat keeps it busy.
 * Tokens come from the same fence counter as lease mode, bumped while the lock is already held.
 * A read-write lock takes the key's same id, shared by readers and exclusive for a writer, so
 * PostgreSQL's lock manager excludes plain locks, writers and readers from each other by itself;
 * the fence row records its grants (session-records.ts). A semaphore's slot i is an advisory id of
 * its own (advisory-key.ts) that nothing else takes: the records, judged under the fence row's lock
 * (session-grant-statement.ts), keep other uses and other limits off the key.
 */
export function sessionStatements(t: TableNames): SessionStatements {
  const live = (where: string): string =>
    `FROM ${t.fences} AS f CROSS JOIN LATERAL ${recordsOf('f.session')} JOIN held ON ${holds('held')} WHERE ${where}`;
  const check = `SELECT pg_backend_pid() AS me, EXISTS (SELECT 1 FROM held WHERE held.pid = $2 AND held.lock = $1::bigint) AS held`;
  // The shared request queues behind a holder's exclusive lock and is granted the moment it goes,
  // whether released or its session ended (a crash); the transaction then ends and lets go at once.
  // A writer's exclusive request waits for readers too; while it waits, PostgreSQL refuses new
  // requests that conflict with it, so readers that try meanwhile are busy and queue behind it.
  const wait = (lock: string): string =>
    `SELECT ${lock}($1::bigint) FROM (SELECT set_config('lock_timeout', $2::int::text, true)) AS bound`;
  return {
    grant: sessionGrantStatement(t),

    check: `WITH ${HELD} ${check}`,

    extend: `WITH ${HELD}, ttl AS (SELECT set_config('idle_session_timeout', $3::int::text, false)) ${check} FROM ttl`,

    release: `SELECT pg_advisory_unlock($1::bigint) AS unlocked, set_config('idle_session_timeout', '0', false)`,

    releaseShared: `SELECT pg_advisory_unlock_shared($1::bigint) AS unlocked, set_config('idle_session_timeout', '0', false)`,

    wait: wait('pg_advisory_xact_lock_shared'),

    waitExclusive: wait('pg_advisory_xact_lock'),

    inspect: `WITH ${HELD} SELECT ${RECORD_INFO} ${live(`f.key = $1 AND ${IS_PLAIN}`)}`,

    list: `WITH ${HELD} SELECT ${RECORD_INFO} ${live(`f.key LIKE $1 AND ${IS_PLAIN}`)} ORDER BY f.key`,

    // Every holder of the key's id (readers included, and one whose grant has not committed its
    // record yet) and every live record's (a semaphore's slots have ids of their own).
    // pg_terminate_backend waits up to a second for each process to end, so the key is free on return.
    forceRelease: `WITH ${HELD}, holders AS (SELECT held.pid FROM held WHERE held.lock = $1::bigint
  UNION SELECT held.pid ${live('f.key = $2')})
SELECT bool_or(pg_terminate_backend(holders.pid, 1000)) AS freed FROM holders`,

    abandon: `WITH ${HELD} SELECT pg_terminate_backend(held.pid, 1000) ${live(`f.key = $1 AND g->>'lock_id' = $2`)}`,

    modeHolders: `WITH ${HELD} SELECT ${RECORD_INFO}, g->>'mode' AS mode ${live(`f.key = $1 AND ${IS_MODE_GRANT}`)}
  ORDER BY (g->>'token')::bigint`,

    slotHolders: `WITH ${HELD} SELECT ${RECORD_INFO} ${live(`f.key = $1 AND ${IS_SLOT}`)} ORDER BY (g->>'token')::bigint`,
  };
}
