/** How a waiting acquire learns that a key may have become free. */
export type WakeUpStyle = 'event' | 'blocking-query' | 'change-stream-or-poll' | 'poll';

/** What a backend guarantees; the conformance suite selects its optional groups from this. */
export interface Capabilities {
  /** Smallest TTL the backend accepts, in ms. */
  readonly minTtlMs: number;
  /** Largest TTL the backend accepts, in ms. */
  readonly maxTtlMs: number;
  /** TTL used when a caller gives none, in ms. */
  readonly defaultTtlMs: number;
  /**
   * 'strict': every grant's token is strictly greater than every earlier grant's token for the key.
   * 'none': tokens are informational only (for example Redlock quorum mode); do not fence with them.
   */
  readonly fencing: 'strict' | 'none';
  /** Waiters are served in request order. */
  readonly fifo: boolean;
  readonly wakeUp: WakeUpStyle;
  /** Locks are shared between OS processes (false for the in-memory backend). */
  readonly crossProcess: boolean;
  /** Extra time beyond the TTL the backend may take to free a crashed holder's lock, in ms. */
  readonly expiryGraceMs: number;
  /**
   * 'per-lock': core renews each lock before its TTL runs out.
   * 'backend': the backend keeps locks alive itself (a session or heartbeat) and reports loss.
   */
  readonly renewal: 'per-lock' | 'backend';
  /** Why this backend has no semaphores; absent where it has them (then `semaphore()` works). */
  readonly noSemaphores?: string;
}

export interface AcquireOptions {
  /** Lease length in ms; renewed automatically unless `autoRenew` is false. */
  readonly ttlMs?: number;
  /** acquire() only: how long to wait for a busy key, in ms. Default: wait forever. 0 = one attempt. */
  readonly waitMs?: number;
  /** acquire() only: cancels the wait. */
  readonly signal?: AbortSignal;
  /** Why the lock is taken; shown by inspect(). */
  readonly reason?: string;
  /** Renew before expiry (default true). With false the lock simply expires after `ttlMs`. */
  readonly autoRenew?: boolean;
}

export interface Lock extends AsyncDisposable {
  readonly key: string;
  /** Fencing token: strictly increasing per key across all holders (see `capabilities.fencing`). */
  readonly token: bigint;
  /** Identity of the provider instance that holds the lock. */
  readonly owner: string;
  readonly reason: string | undefined;
  readonly acquiredAt: Date;
  /** Current lease end as this process knows it; null when the backend has no per-lock expiry. */
  readonly expiresAt: Date | null;
  /**
   * Aborted when the lock is lost or released. `signal.reason` is a LockLostError or a
   * LockReleasedError; check `reason.code` to tell them apart.
   */
  readonly signal: AbortSignal;
  /** Pushes the expiry to now + ttlMs (default: the acquire TTL). Throws LockLostError / LockNotHeldError. */
  extend(ttlMs?: number): Promise<void>;
  /** Frees the lock if this handle still holds it. Idempotent; never frees another holder's lock. */
  release(): Promise<void>;
  /** Asks the backend whether this handle still holds the lock. */
  isHeld(): Promise<boolean>;
}

export interface LockInfo {
  readonly key: string;
  readonly owner: string;
  readonly reason: string | undefined;
  readonly acquiredAt: Date;
  readonly expiresAt: Date | null;
  readonly token: bigint;
  /** Backend-specific facts (session, node, process, last ping, ...), JSON-friendly. */
  readonly details?: Readonly<Record<string, unknown>>;
}

/** What a leader's work function gets: its term's token and a signal that aborts when leadership ends. */
export interface Leadership {
  readonly key: string;
  /** The lock's fencing token: strictly increasing per key across terms and holders. */
  readonly token: bigint;
  /** Aborts the moment leadership is in doubt (lost lock), on resign(), or when the provider closes. */
  readonly signal: AbortSignal;
  readonly acquiredAt: Date;
}

export interface ElectOptions {
  /** Lease length of the leader's lock, in ms (renewed while the work runs). Default: the backend's. */
  readonly ttlMs?: number;
  /** Shown by inspect() and observe() as the leader's reason. */
  readonly reason?: string;
  /** How long the work may run on after its signal aborted before a LeaderWorkOverrunError is reported. Default 5000. */
  readonly graceMs?: number;
  /** Pause before campaigning again after the work threw or the backend failed, in ms. Default 1000. */
  readonly retryDelayMs?: number;
  /** Told of every failure: LeaderWorkError, LeaderWorkOverrunError, BackendError. Default: the provider's logger. */
  readonly onError?: (error: Error) => void;
  /** Aborting it is resign(). */
  readonly signal?: AbortSignal;
}

/** One instance's candidacy, from elect() until resign(). */
export interface Election extends AsyncDisposable {
  readonly key: string;
  /** True while this instance's work runs as leader. */
  readonly leading: boolean;
  /** Terms this instance has led so far. */
  readonly terms: number;
  /**
   * Gives up leadership and stops campaigning: aborts the work's signal, waits for the work to
   * return (up to graceMs), releases the lock so another candidate takes over at once.
   */
  resign(): Promise<void>;
  /** Resolves once the election has stopped (after resign(), its signal, or the provider's close()). */
  readonly done: Promise<void>;
}

/** Up to `limit` holders of one key at once; each holder gets the same handle as a lock. */
export interface Semaphore {
  readonly key: string;
  readonly limit: number;
  /** One attempt, never waits: a slot, or null when all `limit` are taken. */
  tryAcquire(options?: AcquireOptions): Promise<Lock | null>;
  /** Waits up to `waitMs` for a slot; throws LockTimeoutError or LockAbortedError. */
  acquire(options?: AcquireOptions): Promise<Lock>;
  /** Who holds the slots now, from the backend, oldest grant first. */
  holders(): Promise<readonly LockInfo[]>;
}

export interface ObserveOptions {
  /** Ends the observation. */
  readonly signal?: AbortSignal;
}

export interface ListOptions {
  /** Only keys that start with this string; default '' (all keys). */
  readonly prefix?: string;
}

export interface LockProvider extends AsyncDisposable {
  /** Backend name, e.g. "memory", "redis", "consul", "mongodb". */
  readonly backend: string;
  readonly capabilities: Capabilities;
  /** Identity of this provider instance; every lock it grants carries it as `owner`. */
  readonly owner: string;
  /** One attempt, never waits: a lock, or null when the key is busy. Backend failures throw. */
  tryAcquire(key: string, options?: AcquireOptions): Promise<Lock | null>;
  /** Waits up to `waitMs` for the key; throws LockTimeoutError or LockAbortedError. */
  acquire(key: string, options?: AcquireOptions): Promise<Lock>;
  /** Who holds the key, or null when it is free. */
  inspect(key: string): Promise<LockInfo | null>;
  /** This instance's locks, from memory (no backend call), sorted by key. */
  held(): readonly LockInfo[];
  /**
   * Every lock held on the backend by anyone (whose key starts with `prefix`), with its holder,
   * sorted by key. Released and expired locks are not listed.
   */
  list(options?: ListOptions): Promise<readonly LockInfo[]>;
  /**
   * A semaphore: up to `limit` holders of `key` at once (the key is then not usable as a plain
   * lock, nor with another limit: LockConflictError). Throws UnsupportedError when the backend has
   * no semaphores (see `capabilities` and docs/semaphores.md).
   */
  semaphore(key: string, limit: number): Semaphore;
  /**
   * Campaigns for leadership of `key`: once this instance holds the key's lock, `work` runs with a
   * signal that aborts the moment leadership is in doubt. When the work returns or throws the term
   * ends (the lock is released) and the instance campaigns again, until resign().
   */
  elect(key: string, work: (leadership: Leadership) => Promise<unknown>, options?: ElectOptions): Election;
  /**
   * The key's holder now and after every change (null while free), woken by the backend's
   * notifications where it has them. Yields only when the holder (owner or token) changed.
   */
  observe(key: string, options?: ObserveOptions): AsyncIterableIterator<LockInfo | null>;
  /**
   * Administrative: frees the key whoever holds it. The holder is told through its signal
   * (at once where the backend can push, otherwise at its next renewal or check).
   */
  forceRelease(key: string): Promise<boolean>;
  /** Releases every lock this instance holds, cancels its waiters, stops its timers. Idempotent. */
  close(): Promise<void>;
}
