import type { Capabilities, LockInfo } from './types.js';

/** One grant attempt, as core hands it to an adapter. All fields are validated. */
export interface GrantRequest {
  readonly key: string;
  /** Unique per attempt; the adapter's ownership proof (Redis value, Mongo ts, ...). */
  readonly lockId: string;
  readonly owner: string;
  readonly reason: string | undefined;
  readonly ttlMs: number;
  /**
   * False when the caller wants the lock to lapse after `ttlMs` unless extended explicitly. Backends
   * that keep locks alive themselves (capabilities.renewal = 'backend') must then not keep this one alive.
   */
  readonly autoRenew: boolean;
  /** The adapter calls this when it learns by itself that the grant is gone (monitor, push, takeover). */
  readonly onLost: (detail: string, cause?: unknown) => void;
  /**
   * Present on every attempt of a waiting acquire, undefined on a single attempt (tryAcquire, waitMs 0),
   * which must never join a queue. The same for all attempts of one acquire while their lockIds change.
   */
  readonly place?: QueuePlace;
}

/**
 * A waiting acquire's place in line. A backend with a server-side queue (FIFO hand-off) joins or
 * refreshes the queue with it on a busy attempt and grants a place only in its turn; a backend
 * without one ignores it. Core calls `leaveQueue` once the acquire ends without handing out a lock.
 */
export interface QueuePlace {
  /** Unique per waiting acquire. */
  readonly id: string;
  /** The caller's deadline (epoch ms; Infinity when it waits without limit): a place need not outlive it. */
  readonly until: number;
}

/** One attempt at a semaphore slot: at most `limit` grants of the key at once. */
export interface SlotRequest extends GrantRequest {
  /** Validated: a whole number from 1 to MAX_SEMAPHORE_LIMIT. */
  readonly limit: number;
}

/** How a read-write lock's grant shares its key: 'shared' (a reader, many at once) or 'exclusive' (a writer, alone). */
export type LockMode = 'shared' | 'exclusive';

/** One attempt at a read-write lock of the key, in `mode`. */
export interface ModeRequest extends GrantRequest {
  readonly mode: LockMode;
}

/**
 * Bounds one backend call. `signal` aborts at the caller's deadline, on the caller's own abort, at the
 * provider's per-call timeout (`callTimeoutMs`) or when close() runs out of time. Adapters pass it to
 * their I/O so a hung server or a stalled write cannot hold the caller; core also stops waiting for
 * the call at that moment whatever the adapter does, and undoes a grant that arrives late.
 */
export interface CallContext {
  readonly signal: AbortSignal;
  /**
   * Optional, for an adapter that only needs to stop waiting: `listener` runs once, with the reason,
   * when `signal` would abort (at once if it already has), never after the call settled. Reading
   * `signal` builds an AbortController, which costs a Redis round trip's worth of client CPU.
   */
  onAbort?(listener: (reason: unknown) => void): void;
}

/** The answer to an extension: still held (with the new expiry, null = none), or no longer held. */
export type Extension = { readonly held: true; readonly expiresAt: Date | null } | { readonly held: false };

/**
 * A grant the backend made. It carries whatever the adapter needs to keep, check and free it (a
 * session, a ModifyIndex, an ObjectId); core never looks inside.
 */
export interface BackendGrant {
  readonly token: bigint;
  readonly acquiredAt: Date;
  /** The backend's lease end, or null when the grant has none (held while a session lives). */
  readonly expiresAt: Date | null;
  extend(ttlMs: number, call: CallContext): Promise<Extension>;
  /** Frees the grant if it is still this one; true if it was. Never frees another holder. */
  release(call: CallContext): Promise<boolean>;
  isHeld(call: CallContext): Promise<boolean>;
}

/** "Busy", with whatever the adapter learned that helps the wait (an index to block on, a retry-after, ...). */
export interface Busy<Wake = unknown> {
  readonly granted: false;
  readonly wake: Wake | undefined;
}

export interface Granted {
  readonly granted: true;
  readonly grant: BackendGrant;
}

export type GrantOutcome<Wake = unknown> = Granted | Busy<Wake>;

export interface WaitOptions {
  readonly signal: AbortSignal;
  /** Upper bound for this wait, in ms (always finite). */
  readonly timeoutMs: number;
  /** The waiting acquire's place in line (the request's), absent for observers of the key. */
  readonly place?: QueuePlace;
}

/**
 * The adapter side of the contract: small primitives. Core builds the user-facing LockProvider
 * from them (validation, waiting, renewal, handles, signals, close), so every adapter shares them.
 * `Wake` is the adapter's own wait hint, passed from a busy answer to the wait that follows it.
 */
export interface LockBackend<Wake = unknown> {
  readonly name: string;
  readonly capabilities: Capabilities;
  /**
   * One attempt. Throws LockConflictError for a key used otherwise, BackendError on failure (which a
   * waiting acquire retries). With `request.place`, a backend with a queue joins or refreshes it
   * when busy and grants only in the place's turn.
   */
  tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<Wake>>;
  /**
   * Optional: resolve when another attempt is worth making (the key may have become free, the
   * place reached the head of its queue, the place needs refreshing), or after `timeoutMs`,
   * whichever comes first (never reject on timeout). `busy` is the answer of the attempt just
   * before. Without it core polls every `pollIntervalMs`.
   */
  waitForChange?(key: string, busy: Busy<Wake>, options: WaitOptions): Promise<void>;
  /**
   * Optional, for a backend that queues places: a waiting acquire whose attempts carried `place`
   * ended without a lock (deadline, abort, failure, a grant core could not hand out). Remove the
   * place so nobody behind it waits for it; a no-op when it holds no place. Called once, in the background.
   */
  leaveQueue?(key: string, place: QueuePlace, call: CallContext): Promise<void>;
  /**
   * Set by a backend whose queued place becomes the holder by itself once it is first in line (the
   * etcd and ZooKeeper recipes: the waiter's own entry is the lock). Core then answers a waiting
   * acquire that ends without a lock only after leaveQueue removed its place (within a short grace).
   */
  readonly placesHoldKeys?: boolean;
  /**
   * Frees whatever `request` may have been granted although its answer never reached core (the
   * caller gave up, the reply was lost). Owner-checked by `request.lockId`; a no-op when nothing landed.
   */
  abandon(request: GrantRequest, call: CallContext): Promise<void>;
  /**
   * Optional: semaphores. One attempt at one of `request.limit` slots of the key; busy when all are
   * taken. Throws LockConflictError when the key is in use as a plain lock or with another limit.
   * Its grants' tokens share the key's counter (strictly increasing across all slots). Releases
   * of slots must wake waitForChange(key) waiters; abandon() receives SlotRequests too.
   */
  tryGrantSlot?(request: SlotRequest, call: CallContext): Promise<GrantOutcome<Wake>>;
  /** With tryGrantSlot: the current holders of the key's slots (unexpired), oldest grant first. */
  slotHolders?(key: string, call: CallContext): Promise<readonly LockInfo[]>;
  /**
   * Optional: read-write locks. One attempt at a shared grant (granted while no exclusive grant holds
   * the key) or an exclusive one (granted while nothing holds it); busy otherwise. With
   * `capabilities.writerPreferred`, a shared attempt is also busy while an exclusive place waits in
   * line, so a stream of readers cannot starve a writer. Throws LockConflictError when the key is in
   * use as a plain lock or a semaphore (and those refuse a key in read-write use). Tokens share the
   * key's counter (strictly increasing across both modes); releases wake waitForChange(key) waiters;
   * abandon() and leaveQueue() receive ModeRequests and their places too. Without it (or with
   * `capabilities.noReadWrite`), core answers UnsupportedError and the adapter needs nothing else.
   */
  tryGrantMode?(request: ModeRequest, call: CallContext): Promise<GrantOutcome<Wake>>;
  /** With tryGrantMode: the key's read-write holders (unexpired), oldest grant first, `details.mode` saying how. */
  modeHolders?(key: string, call: CallContext): Promise<readonly LockInfo[]>;
  /**
   * Optional, for lock hand-off (`provider.resume`): the grant of a lock another handle holds, rebuilt
   * from its proof (`request.lockId`, the token): what extend, release and isHeld need. Need not ask
   * the server: core renews the grant at once (owner-checked) and checks the token against inspect()
   * or slotHolders(). Throw UnsupportedError for a kind of grant it cannot rebuild.
   */
  resumeGrant?(
    request: GrantRequest | SlotRequest,
    held: { readonly token: bigint; readonly acquiredAt: Date },
    call: CallContext,
  ): Promise<BackendGrant>;
  inspect(key: string, call: CallContext): Promise<LockInfo | null>;
  /** Every held, unexpired lock whose key starts with `prefix` ('' = all), sorted by key. */
  list(prefix: string, call: CallContext): Promise<readonly LockInfo[]>;
  forceRelease(key: string, call: CallContext): Promise<boolean>;
  /**
   * Called after core released everything: close connections, stop heartbeats. When `call.signal`
   * aborts (close ran out of time) end connections at once instead of waiting for the server.
   */
  close(call: CallContext): Promise<void>;
}

export function granted(grant: BackendGrant): Granted {
  return { granted: true, grant };
}

const BUSY: Busy<never> = Object.freeze({ granted: false, wake: undefined });

export function busy<Wake>(wake?: Wake): Busy<Wake> {
  return wake === undefined ? BUSY : { granted: false, wake };
}

export function stillHeld(expiresAt: Date | null): Extension {
  return { held: true, expiresAt };
}

export const NOT_HELD: Extension = Object.freeze({ held: false });
