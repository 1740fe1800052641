/** Stable machine-readable codes; `err.code` never changes meaning between versions. */
export const ErrorCode = {
  Timeout: 'HOLDFAST_TIMEOUT',
  Aborted: 'HOLDFAST_ABORTED',
  Lost: 'HOLDFAST_LOST',
  Released: 'HOLDFAST_RELEASED',
  NotHeld: 'HOLDFAST_NOT_HELD',
  Conflict: 'HOLDFAST_CONFLICT',
  InvalidArgument: 'HOLDFAST_INVALID_ARGUMENT',
  Backend: 'HOLDFAST_BACKEND',
  ProviderClosed: 'HOLDFAST_PROVIDER_CLOSED',
  AdapterMissing: 'HOLDFAST_ADAPTER_MISSING',
  Unsupported: 'HOLDFAST_UNSUPPORTED',
  LeaderWorkFailed: 'HOLDFAST_LEADER_WORK_FAILED',
  LeaderWorkOverran: 'HOLDFAST_LEADER_WORK_OVERRAN',
  AdapterContract: 'HOLDFAST_ADAPTER_CONTRACT',
  HandedOff: 'HOLDFAST_HANDED_OFF',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * Marks Holdfast errors across copies of this package: an app can end up with two copies of core
 * (an adapter resolved another version), and `instanceof` must still work between them.
 */
const BRAND = Symbol.for('holdfast.error');

export class HoldfastError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** `err instanceof LockTimeoutError` holds for an error from any copy of core: same brand, same class name. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (typeof value !== 'object' || value === null || !(value as Record<symbol, unknown>)[BRAND]) return false;
    // biome-ignore lint/complexity/noThisInStatic: `this` is the subclass instanceof asks about, not HoldfastError
    return this === HoldfastError || Function.prototype[Symbol.hasInstance].call(this, value) || (value as Error).name === this.name;
  }
}

/** acquire() waited `waitMs` and the key stayed busy. */
export class LockTimeoutError extends HoldfastError {
  constructor(
    readonly key: string,
    readonly waitMs: number,
  ) {
    super(ErrorCode.Timeout, `timed out after ${waitMs} ms waiting for lock "${key}"`);
  }
}

/** The caller's AbortSignal cancelled a waiting acquire. */
export class LockAbortedError extends HoldfastError {
  constructor(
    readonly key: string,
    cause?: unknown,
  ) {
    super(ErrorCode.Aborted, `acquire of lock "${key}" was aborted`, { cause });
  }
}

/** The lock was lost: renewal failed, expired, taken over or deleted externally. */
export class LockLostError extends HoldfastError {
  constructor(
    readonly key: string,
    detail: string,
    cause?: unknown,
  ) {
    super(ErrorCode.Lost, `lock "${key}" was lost: ${detail}`, { cause });
  }
}

/** The abort reason of a lock's signal after a normal release. */
export class LockReleasedError extends HoldfastError {
  constructor(readonly key: string) {
    super(ErrorCode.Released, `lock "${key}" was released`);
  }
}

/** The abort reason of a lock's signal after `lock.handOff()`: another process holds it now. */
export class LockHandedOffError extends HoldfastError {
  constructor(readonly key: string) {
    super(ErrorCode.HandedOff, `lock "${key}" was handed off to another holder`);
  }
}

/** An operation needed the lock to be held by this handle and it is not. */
export class LockNotHeldError extends HoldfastError {
  constructor(
    readonly key: string,
    detail = 'not held by this handle',
  ) {
    super(ErrorCode.NotHeld, `lock "${key}": ${detail}`);
  }
}

/** The key exists in the backend but is used by another kind of lock (or another limit). */
export class LockConflictError extends HoldfastError {
  constructor(
    readonly key: string,
    detail: string,
  ) {
    super(ErrorCode.Conflict, `lock "${key}": ${detail}`);
  }
}

export class InvalidArgumentError extends HoldfastError {
  constructor(
    readonly argument: string,
    detail: string,
  ) {
    super(ErrorCode.InvalidArgument, `invalid ${argument}: ${detail}`);
  }
}

/** The backend failed (unreachable, refused, quorum not reached). Never means "busy". */
export class BackendError extends HoldfastError {
  constructor(
    readonly backend: string,
    detail: string,
    cause?: unknown,
  ) {
    super(ErrorCode.Backend, `${backend} backend failed: ${detail}`, { cause });
  }
}

/**
 * A waiting acquire whose backend failed before it had ever answered this provider (a wrong host or
 * port, a server not started): reported at once instead of retried in silence. Still a
 * `BackendError` (same code); its own class so that a tool can word the remedy its own way (the
 * CLI names `--wait-for-backend`, the library the `waitForBackend` option).
 */
export class BackendNeverAnsweredError extends BackendError {
  /** The failure's own message, without the advice around it. */
  readonly failure: string;
  constructor(backend: string, cause: unknown) {
    const failure = cause instanceof Error ? cause.message : String(cause);
    super(
      backend,
      `it has never answered this provider (${failure}); check the URL, or pass waitForBackend: true to wait for it to come up`,
      cause,
    );
    this.failure = failure;
  }
}

export class ProviderClosedError extends HoldfastError {
  constructor(readonly backend: string) {
    super(ErrorCode.ProviderClosed, `the ${backend} lock provider is closed`);
  }
}

export class AdapterMissingError extends HoldfastError {
  constructor(
    readonly packageName: string,
    readonly scheme: string,
    cause?: unknown,
    problem = 'is not installed',
  ) {
    super(
      ErrorCode.AdapterMissing,
      problem === 'is not installed'
        ? `no adapter for "${scheme}" URLs: ${packageName} is not installed (npm install ${packageName})`
        : `the adapter for "${scheme}" URLs, ${packageName}, ${problem}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

export function isHoldfastError(value: unknown, code?: ErrorCode): value is HoldfastError {
  return value instanceof HoldfastError && (code === undefined || (value as HoldfastError).code === code);
}

/** An election's leader work threw; the term ended (the lock was released) and the election campaigns again. */
export class LeaderWorkError extends HoldfastError {
  constructor(
    readonly key: string,
    cause: unknown,
  ) {
    super(ErrorCode.LeaderWorkFailed, `the leader work for "${key}" failed: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
  }
}

/**
 * An election's leader work kept running `graceMs` after its signal aborted (leadership lost or
 * resigned). This instance stays out of the election until the work returns.
 */
export class LeaderWorkOverrunError extends HoldfastError {
  constructor(
    readonly key: string,
    readonly graceMs: number,
  ) {
    super(
      ErrorCode.LeaderWorkOverran,
      `the leader work for "${key}" ignored its signal for ${graceMs} ms after leadership ended; not campaigning until it returns`,
    );
  }
}

/** The backend cannot do what was asked (a semaphore on a backend without them); nothing was sent to it. */
export class UnsupportedError extends HoldfastError {
  constructor(
    readonly backend: string,
    readonly feature: string,
    reason: string,
  ) {
    super(ErrorCode.Unsupported, `the ${backend} backend has no ${feature}: ${reason}`);
  }
}

/**
 * An adapter answered core with something the LockBackend contract does not allow (a `tryGrant`
 * that resolved to null, a grant whose token is no bigint): a bug in the adapter, not a failure of
 * its server, so a waiting acquire does not retry it. The message names the adapter, the method and
 * the rule it broke.
 */
export class AdapterContractError extends HoldfastError {
  constructor(
    /** The adapter's `name`. */
    readonly backend: string,
    /** The method whose answer broke the rule, e.g. `tryGrant` or `grant.extend`. */
    readonly method: string,
    /** What the contract asks of that answer. */
    readonly rule: string,
    /** What the adapter answered, as text. */
    readonly got: string,
  ) {
    super(ErrorCode.AdapterContract, `adapter "${backend}": ${method} must ${rule}, got ${got}`);
  }
}
