import { InvalidArgumentError, UnsupportedError } from './errors.js';
import type { AcquireOptions, Lock, LockProvider } from './types.js';
import { validateKey } from './validation.js';

/** The W3C Web Locks modes. */
export type WebLockMode = 'exclusive' | 'shared';

/** What `navigator.locks.request()` takes, plus nothing Holdfast-specific: the manager's options set leases. */
export interface WebLockOptions {
  readonly mode?: WebLockMode;
  /** Call back at once with null when the lock cannot be granted right away. */
  readonly ifAvailable?: boolean;
  /** Take the lock from whoever holds it (a forced release: the old holder is told through its signal). */
  readonly steal?: boolean;
  /** Aborts the wait; the request then rejects with the signal's reason, as in browsers. */
  readonly signal?: AbortSignal;
}

/** The lock a callback gets: the W3C `name` and `mode`, and Holdfast's token and lost-lock signal. */
export interface WebLock {
  readonly name: string;
  readonly mode: WebLockMode;
  readonly token: bigint;
  /** Aborts when the lock is lost (stolen, lapsed): stop the work. */
  readonly signal: AbortSignal;
}

/** One entry of query(): the W3C `LockInfo` fields, `clientId` being the holder's owner. */
export interface WebLockInfo {
  readonly name: string;
  readonly mode: WebLockMode;
  readonly clientId: string;
}

export interface WebLockSnapshot {
  readonly held: readonly WebLockInfo[];
  readonly pending: readonly WebLockInfo[];
}

export type WebLockCallback<T> = (lock: WebLock | null) => T | Promise<T>;

/** Lease and wait settings the W3C API has no words for; the same for every request of a manager. */
export interface LockManagerOptions {
  readonly ttlMs?: number;
  /** How long a request waits at most (W3C requests wait without limit; so does this by default). */
  readonly waitMs?: number;
  /**
   * The scope of this manager's names, as a browser scopes them to an origin: each name lives on the
   * backend as `origin + name`, and query() lists only this origin's locks. Without it query() lists the
   * provider's whole namespace, which costs a read per held lock on some backends.
   */
  readonly origin?: string;
}

/**
 * `navigator.locks` over a LockProvider (W3C Web Locks semantics), so code written for browser or
 * worker locks goes distributed by swapping the manager. Exclusive requests are the provider's
 * writers where it has read-write locks, its plain locks otherwise; shared ones are its readers.
 */
export class LockManager {
  private readonly pending = new Set<WebLockInfo>();
  private readonly held = new Set<WebLockInfo>();

  private readonly origin: string;

  constructor(
    private readonly provider: LockProvider,
    private readonly options: LockManagerOptions = {},
  ) {
    if (options.origin !== undefined && typeof options.origin !== 'string') {
      throw new InvalidArgumentError('origin', 'expected a string (a prefix of every name)');
    }
    this.origin = options.origin ?? '';
  }

  request<T>(name: string, callback: WebLockCallback<T>): Promise<T>;
  request<T>(name: string, options: WebLockOptions, callback: WebLockCallback<T>): Promise<T>;
  async request<T>(name: string, second: WebLockOptions | WebLockCallback<T>, third?: WebLockCallback<T>): Promise<T> {
    const [options, callback] = typeof second === 'function' ? [{}, second] : [second, third];
    const mode = validated(name, options, callback);
    validateKey(this.origin + name);
    options.signal?.throwIfAborted();
    const info: WebLockInfo = { name, mode, clientId: this.provider.owner };
    this.pending.add(info);
    let lock: Lock | null;
    try {
      lock = await this.take(name, mode, options);
    } finally {
      this.pending.delete(info);
    }
    if (!lock) return callback!(null);
    this.held.add(info);
    try {
      const lost = new Promise<never>((_, reject) => {
        const onLost = (): void => reject(lock.signal.reason);
        lock.signal.addEventListener('abort', onLost, { once: true });
      });
      lost.catch(() => undefined);
      // As in browsers, a stolen (here: lost) lock's request settles at once with the reason; the callback's own outcome is then ignored.
      return await Promise.race([Promise.resolve(callback!({ name, mode, token: lock.token, signal: lock.signal })), lost]);
    } finally {
      this.held.delete(info);
      await lock.release().catch(() => undefined);
    }
  }

  /**
   * As far as the backend knows: held = what its list() shows (plain locks), this manager's own
   * grants, and the read-write holders of the names this manager waits for; pending = this
   * manager's waiting requests (other instances' waiters are not visible on every backend).
   */
  async query(): Promise<WebLockSnapshot> {
    const held = new Map<string, WebLockInfo>();
    const add = (info: WebLockInfo): void => void held.set(`${info.name}\u0000${info.clientId}\u0000${info.mode}`, info);
    for (const info of await this.provider.list({ prefix: this.origin })) {
      add({ name: info.key.slice(this.origin.length), mode: 'exclusive', clientId: info.owner });
    }
    for (const info of this.held) add(info);
    if (this.hasReadWrite()) {
      for (const name of new Set([...this.pending].map((info) => info.name))) {
        for (const holder of await this.provider.readWrite(this.origin + name).holders()) {
          add({ name, mode: holder.details?.['mode'] === 'shared' ? 'shared' : 'exclusive', clientId: holder.owner });
        }
      }
    }
    return { held: [...held.values()], pending: [...this.pending] };
  }

  private async take(name: string, mode: WebLockMode, options: WebLockOptions): Promise<Lock | null> {
    const key = this.origin + name;
    const acquire: AcquireOptions = { ttlMs: this.options.ttlMs, waitMs: this.options.waitMs, signal: options.signal };
    const readWrite = this.hasReadWrite() ? this.provider.readWrite(key) : undefined;
    if (mode === 'shared' && !readWrite) {
      throw new UnsupportedError(
        this.provider.backend,
        'shared Web Locks',
        this.provider.capabilities.noReadWrite ?? 'no read-write locks',
      );
    }
    if (options.ifAvailable) {
      if (!readWrite) return this.provider.tryAcquire(key, { ttlMs: this.options.ttlMs });
      return mode === 'shared' ? readWrite.tryRead({ ttlMs: this.options.ttlMs }) : readWrite.tryWrite({ ttlMs: this.options.ttlMs });
    }
    if (options.steal) await this.provider.forceRelease(key);
    try {
      if (!readWrite) return await this.provider.acquire(key, acquire);
      return await (mode === 'shared' ? readWrite.read(acquire) : readWrite.write(acquire));
    } catch (error) {
      // As in browsers: an aborted request rejects with the signal's reason.
      if (options.signal?.aborted) throw options.signal.reason;
      throw error;
    }
  }

  private hasReadWrite(): boolean {
    try {
      this.provider.readWrite('holdfast-probe');
      return true;
    } catch (error) {
      if (error instanceof UnsupportedError) return false;
      throw error;
    }
  }
}

/** The W3C rules for a request's options (NotSupportedError there; a typed InvalidArgumentError here). */
function validated(name: string, options: WebLockOptions, callback: unknown): WebLockMode {
  validateKey(name);
  // Reserved by the W3C API for the platform's own use.
  if (name.startsWith('-')) throw new InvalidArgumentError('name', 'names starting with "-" are reserved');
  if (typeof callback !== 'function') throw new InvalidArgumentError('callback', 'expected a function (lock) => result');
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object');
  const mode = options.mode ?? 'exclusive';
  if (mode !== 'exclusive' && mode !== 'shared')
    throw new InvalidArgumentError('mode', `expected "exclusive" or "shared", got ${String(mode)}`);
  if (options.steal && options.ifAvailable) throw new InvalidArgumentError('steal', 'cannot be combined with ifAvailable');
  if (options.steal && mode === 'shared') throw new InvalidArgumentError('steal', 'only an exclusive request may steal');
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal))
    throw new InvalidArgumentError('signal', 'expected an AbortSignal');
  if (options.signal && (options.steal || options.ifAvailable)) {
    throw new InvalidArgumentError('signal', 'cannot be combined with steal or ifAvailable');
  }
  return mode;
}
