/** Facts of the Go client (api/lock.go) that `consul lock` and other Go peers rely on. */

/** KV flags of a lock key; exceeds 2^53, so it is kept as a decimal string and never a JS number. */
export const LOCK_FLAG = '3304740253564472344'; // 0x2ddccbc058a50c18

export const LOCK_SESSION_NAME = 'Consul API Lock';

/** Consul's session TTL bounds (server-side validation). */
export const MIN_SESSION_TTL_MS = 10_000;
export const MAX_SESSION_TTL_MS = 86_400_000;

/** Consul invalidates a session 2 x TTL after its last renewal (SessionTTLMultiplier). */
export const SESSION_TTL_MULTIPLIER = 2;

/** Server default lock-delay; also the Go client's. */
export const DEFAULT_LOCK_DELAY_MS = 15_000;
/** Go client: wait this long after an acquire refused by lock-delay. */
export const DEFAULT_LOCK_DELAY_RETRY_MS = 5_000;
/** `consul lock` CLI defaults (-monitor-retry=3); the Go API default is 0 retries, 2 s apart. */
export const DEFAULT_MONITOR_RETRIES = 3;
export const DEFAULT_MONITOR_RETRY_MS = 2_000;
/** Go client: retry a failed renewal every second. */
export const RENEW_RETRY_MS = 1_000;
/** Go client's DefaultLockWaitTime: the longest single blocking query. */
export const BLOCKING_WAIT_MS = 15_000;

/** KV flags of a semaphore's contender entries and coordination key (0xe0f69a2baa414de0). */
export const SEMAPHORE_FLAG = '16210313421097356768';
export const SEMAPHORE_SESSION_NAME = 'Consul API Semaphore';
/** The session of Holdfast's wait-queue entries (queue.ts), which holds no lock. */
export const QUEUE_SESSION_NAME = 'Holdfast wait queue';
/** The Go semaphore's coordination key under its prefix. */
export const SEMAPHORE_LOCK_KEY = '.lock';
/**
 * KV flags of a read-write lock's coordination key and entries: Holdfast's own (not a Go peer's), so
 * neither `consul lock -n N` nor a Holdfast semaphore ever mistakes a read-write record for its own.
 */
export const READ_WRITE_FLAG = '7381554790119243102';
/** The Limit a read-write record carries for Go's record shape: the modes, not a count, decide who enters. */
export const READ_WRITE_LIMIT = 2_147_483_647;
