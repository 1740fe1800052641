/** The default namespace: without one, a lock key could be an application's own data key. */
export const DEFAULT_PREFIX = 'holdfast:';

/** Marks the companion keys of a lock; no valid Holdfast key contains it (no empty "/" segment). */
const COMPANION = '//';

/** The Redis names of one lock. */
export interface LockKeys {
  /** `prefix + key`, value = the holder's lockId: the resource name the redlock package uses. */
  readonly lock: string;
  /** Hash with the never-reset fencing counter ("fence"). */
  readonly fence: string;
  /** Hash with the current holder's metadata; expires with the lock key. */
  readonly holder: string;
  /** A semaphore's hash: its limit and a holder record per slot; expires with the last slot. */
  readonly slots: string;
  /** Published by the release scripts. */
  readonly channel: string;
  /** Single node: the waiters of a plain lock, a sorted set by arrival (queue-scripts.ts). */
  readonly queue: string;
  /** Single node: each queued waiter's expiry on the server's clock. */
  readonly queueExpiries: string;
}

/**
 * Redis names derived from a Holdfast key. The lock key itself is `prefix + key`, so with
 * `prefix: ''` Holdfast and redlock exclude each other. Companion names add "//", so they can
 * never collide with another lock's key. Pub/sub channels are not per database, so the db is part
 * of their names.
 */
export class KeyNames {
  private readonly releasedPrefix: string;
  private readonly keyspacePrefix: string;

  constructor(
    readonly prefix: string,
    db: number,
  ) {
    this.releasedPrefix = `holdfast:released@${db}:${prefix}`;
    this.keyspacePrefix = `__keyspace@${db}__:${prefix}`;
  }

  of(key: string): LockKeys {
    const lock = this.prefix + key;
    return {
      lock,
      fence: `${lock}${COMPANION}holdfast`,
      holder: `${lock}${COMPANION}holder`,
      slots: `${lock}${COMPANION}slots`,
      channel: this.releasedPrefix + key,
      queue: `${lock}${COMPANION}queue`,
      queueExpiries: `${lock}${COMPANION}queue-expiries`,
    };
  }

  /** SCAN pattern for every Redis key of the locks whose keys start with `keyPrefix`. */
  scanPattern(keyPrefix: string): string {
    return `${globEscape(this.prefix + keyPrefix)}*`;
  }

  /** The Holdfast key of a scanned Redis key, or undefined for a companion key. */
  keyOf(redisKey: string): string | undefined {
    const key = redisKey.slice(this.prefix.length);
    return key === '' || key.includes(COMPANION) ? undefined : key;
  }

  /** Patterns of the release channels and, when the server sends them, keyspace notifications of every lock key. */
  get wakeUpPatterns(): readonly [released: string, keyspace: string] {
    return [`${globEscape(this.releasedPrefix)}*`, `${globEscape(this.keyspacePrefix)}*`];
  }

  /** The lock a release message is about. */
  releasedKey(channel: string): string | undefined {
    return channel.startsWith(this.releasedPrefix) ? this.keyOf(this.prefix + channel.slice(this.releasedPrefix.length)) : undefined;
  }

  /** The lock a keyspace notification is about (undefined for companion keys and others). */
  keyspaceKey(channel: string): string | undefined {
    return channel.startsWith(this.keyspacePrefix) ? this.keyOf(this.prefix + channel.slice(this.keyspacePrefix.length)) : undefined;
  }
}

/** Redis glob patterns treat these characters specially; a backslash makes them literal. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
