import type { Capabilities, LockInfo } from './types.js';

/** One grant attempt, as core hands it to an adapter. All fields are validated. */
export interface GrantRequest {
  readonly key: string;
  /** Unique per acquisition; the adapter's ownership proof (Redis value, Mongo ts, ...). */
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
}

export interface Grant {
  readonly token: bigint;
  readonly acquiredAt: Date;
  readonly expiresAt: Date | null;
}

/**
 * Bounds one backend call. `signal` aborts at the caller's deadline, on the caller's own abort, at the
 * provider's per-call timeout (`callTimeoutMs`) or when close() runs out of time. Adapters pass it to
 * their I/O so a hung server or a stalled write cannot hold the caller; core also stops waiting for
 * the call at that moment whatever the adapter does, and releases a grant that arrives late.
 */
export interface CallContext {
  readonly signal: AbortSignal;
}

export interface WaitOptions {
  readonly signal: AbortSignal;
  /** Upper bound for this wait, in ms (always finite). */
  readonly timeoutMs: number;
}

/**
 * The adapter side of the contract: small primitives. Core builds the user-facing LockProvider
 * from them (validation, waiting, renewal, handles, signals, close), so every adapter shares them.
 */
export interface LockBackend {
  readonly name: string;
  readonly capabilities: Capabilities;
  /** One attempt. Null = busy. Throws LockConflictError for a key used otherwise, BackendError on failure. */
  tryGrant(request: GrantRequest, call: CallContext): Promise<Grant | null>;
  /**
   * Optional: a native queued acquire (FIFO backends). Resolves to a grant, or null when the
   * deadline passes; rejects with the signal's reason when aborted, leaving no queue entry behind.
   */
  acquireQueued?(request: GrantRequest, wait: { signal: AbortSignal; deadline: number }): Promise<Grant | null>;
  /**
   * Optional: resolve when the key may have become free, or after `timeoutMs`, whichever comes
   * first (never reject on timeout). Without it core polls.
   */
  waitForChange?(key: string, options: WaitOptions): Promise<void>;
  /** New expiry (null = backend has none), or undefined when the grant is no longer held. */
  extend(key: string, lockId: string, ttlMs: number, call: CallContext): Promise<Date | null | undefined>;
  /** Frees the grant if it is still held by lockId; true if it was. Never frees another holder. */
  release(key: string, lockId: string, call: CallContext): Promise<boolean>;
  isHeld(key: string, lockId: string, call: CallContext): Promise<boolean>;
  inspect(key: string, call: CallContext): Promise<LockInfo | null>;
  forceRelease(key: string, call: CallContext): Promise<boolean>;
  /**
   * Called after core released everything: close connections, stop heartbeats. When `call.signal`
   * aborts (close ran out of time) end connections at once instead of waiting for the server.
   */
  close(call: CallContext): Promise<void>;
}
