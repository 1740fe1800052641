import type { LockProof } from './lock-proof.js';

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
  /** Why this backend has no read-write locks; absent where it has them (then `readWrite()` works). */
  readonly noReadWrite?: string;
  /**
   * What a semaphore slot needs of the backend beyond what a plain lock needs, where it needs more
   * (a Redis quorum: more nodes up for a larger limit); absent where a slot needs what a lock does.
   */
  readonly semaphoreNeeds?: string;
  /**
   * Read-write locks only: a waiting writer is not overtaken by readers that ask after it, so a
   * stream of readers cannot starve it (the backend orders its waiters). Absent or false: no such promise.
   */
  readonly writerPreferred?: boolean;
  /**
   * Why this backend's locks cannot be handed to another process (`lock.handOff()`,
   * `provider.resume()`): a grant tied to a connection or session. Absent where they can, unless
   * `renewal` is 'backend' (a session or ping keeps the lock: never movable).
   */
  readonly noHandOff?: string;
  /** Why a semaphore slot cannot be handed off where plain locks can; absent where slots move too. */
  readonly noSlotHandOff?: string;
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
  /**
   * acquire() only: keep retrying a backend that has never answered this provider (a server still
   * starting, a port not open yet) until `waitMs`. Default false: a backend that has never answered
   * is reported at once with a BackendError, so a wrong URL cannot hang a caller that waits forever.
   * A backend that answered before is always retried while the caller waits (docs/observability.md).
   */
  readonly waitForBackend?: boolean;
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
  /**
   * The lock's proof, for another process to take it over with `provider.resume(proof)`
   * (docs/hand-off.md). This handle keeps holding and renewing it: use `handOff()` to let go.
   * UnsupportedError where the backend's locks cannot move (`capabilities.noHandOff`).
   */
  toJSON(): LockProof;
  /**
   * Stops holding the lock without releasing it: renewal stops, the provider forgets it (its close()
   * leaves it held), the signal aborts with a LockHandedOffError, and the proof is returned. The
   * lock lives on its lease until someone resumes it, or lapses.
   */
  handOff(): LockProof;
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

/**
 * Several keys held together, all or none (`acquireAll`). Each key keeps its own lock, token and
 * renewal; the handle speaks for all of them.
 */
export interface MultiLock extends AsyncDisposable {
  /** The keys in the order they were taken (the canonical, sorted order). */
  readonly keys: readonly string[];
  /** Each key's own lock, in `keys` order: its token, expiry and signal. */
  readonly locks: ReadonlyMap<string, Lock>;
  /** Each key's fencing token (strictly increasing per key, like a single lock's). */
  readonly tokens: ReadonlyMap<string, bigint>;
  /** Identity of the provider instance that holds the keys. */
  readonly owner: string;
  /** The earliest lease end among the keys; null when none has a per-lock expiry. */
  readonly expiresAt: Date | null;
  /**
   * Aborts when any key is lost (the reason is that key's LockLostError, naming it) or when the
   * keys are released (a LockReleasedError). Stop the protected work when it aborts.
   */
  readonly signal: AbortSignal;
  /** Extends every key (default: the acquire TTL); throws the first key's LockLostError / LockNotHeldError. */
  extend(ttlMs?: number): Promise<void>;
  /**
   * Frees every key still held by this handle, all of them even when one fails; then throws the
   * first failure (that key's signal says it was not confirmed). Idempotent.
   */
  release(): Promise<void>;
  /** True while the backend confirms every key is still held by this handle. */
  isHeld(): Promise<boolean>;
}

/**
 * Many readers or one writer of a key (`provider.readWrite(key)`); each grant is the same handle as
 * a lock, and tokens strictly increase per key across readers and writers.
 */
export interface ReadWriteLock {
  readonly key: string;
  /** One attempt at a shared grant: null while a writer holds the key (or, where writers are preferred, waits for it). */
  tryRead(options?: AcquireOptions): Promise<Lock | null>;
  /** Waits up to `waitMs` for a shared grant. */
  read(options?: AcquireOptions): Promise<Lock>;
  /** One attempt at the exclusive grant: null while anyone holds the key. */
  tryWrite(options?: AcquireOptions): Promise<Lock | null>;
  /** Waits up to `waitMs` for the exclusive grant. */
  write(options?: AcquireOptions): Promise<Lock>;
  /** Who holds the key now, oldest grant first; `details.mode` is 'shared' or 'exclusive'. */
  holders(): Promise<readonly LockInfo[]>;
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
  /**
   * One attempt at every key, never waits: all of them in one handle, or null (holding none) when
   * any is busy. Keys are taken in sorted order; duplicates are an InvalidArgumentError.
   */
  tryAcquireAll(keys: readonly string[], options?: AcquireOptions): Promise<MultiLock | null>;
  /**
   * Waits up to `waitMs` (for all keys together) until it holds every key, taken one by one in
   * sorted order so that callers with overlapping sets never deadlock; on any failure (timeout,
   * abort, a key lost meanwhile, the backend) it releases what it took and throws, holding none.
   */
  acquireAll(keys: readonly string[], options?: AcquireOptions): Promise<MultiLock>;
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
   * A read-write lock of `key`: many readers or one writer (the key is then not usable as a plain
   * lock or semaphore: LockConflictError). Throws UnsupportedError when the backend has none (see
   * `capabilities.noReadWrite` and docs/read-write.md).
   */
  readWrite(key: string): ReadWriteLock;
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
  /**
   * Takes over a lock another process (or provider) handed off: `proof` is what `lock.handOff()`
   * returned, as an object or JSON text. The lock is renewed at once (a fresh lease of the proof's
   * ttlMs, owner-checked), keeps its fencing token and is renewed from then on by this provider.
   * LockLostError when it was lost or released meanwhile; UnsupportedError where locks cannot move
   * (`capabilities.noHandOff`; docs/hand-off.md).
   */
  resume(proof: LockProof | string): Promise<Lock>;
  /** Releases every lock this instance holds, cancels its waiters, stops its timers. Idempotent. */
  close(): Promise<void>;
}
