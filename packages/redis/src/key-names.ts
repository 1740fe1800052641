import { slotOf, tagForSlot } from './slot-tag.js';

/** The default namespace: without one, a lock key could be an application's own data key. */
export const DEFAULT_PREFIX = 'holdfast:';

/** Marks the companion keys of a lock; no valid Holdfast key contains it (no empty "/" segment). */
const COMPANION = '//';

/** The Redis names of one lock. */
export interface LockKeys {
  /** `prefix + key`, value = the holder's lockId: the resource name the redlock package uses. */
  readonly lock: string;
  /** Hash with the never-reset fencing counter ("fence") and the queue's arrival counter. */
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
  /** Single node: a read-write lock's line of waiting places, and each place's mode and expiry (mode-scripts.ts). */
  readonly rwLine: string;
  readonly rwLineInfo: string;
  /**
   * The fence hash of versions up to 0.1 (`lock + "//holdfast"`), a floor for tokens during a rolling
   * upgrade (FENCE_BUMP in scripts.ts), as the extra KEYS of the granting scripts: none on a Cluster
   * (another hash slot, and those versions never ran there).
   */
  readonly legacyFence: readonly string[];
}

/**
 * Redis names derived from a Holdfast key. The lock key itself is `prefix + key`, as in every
 * version, so with `prefix: ''` Holdfast and redlock exclude each other, and old and new versions
 * contend on the same key during a rolling upgrade. Companion names contain "//", so they can never
 * collide with another lock's key, and carry a hash tag that puts them in the lock key's hash slot
 * (companionBase). Pub/sub channels are not per database, so the db is part of their names.
 */
export class KeyNames {
  private readonly releasedPrefix: string;
  private readonly keyspacePrefix: string;

  constructor(
    readonly prefix: string,
    db: number,
    /** Whether versions up to 0.1 may have written here (not on a Cluster): their fence counters are then a floor. */
    private readonly legacy = true,
  ) {
    this.releasedPrefix = `holdfast:released@${db}:${prefix}`;
    this.keyspacePrefix = `__keyspace@${db}__:${prefix}`;
  }

  of(key: string): LockKeys {
    const lock = this.prefix + key;
    const base = companionBase(lock);
    const companion = (name: string): string => `${base}${COMPANION}${name}`;
    return {
      lock,
      fence: companion('fence'),
      holder: companion('holder'),
      slots: companion('slots'),
      channel: this.releasedPrefix + key,
      queue: companion('queue'),
      queueExpiries: companion('queue-expiries'),
      rwLine: companion('rw-line'),
      rwLineInfo: companion('rw-line-info'),
      legacyFence: this.legacy ? [`${lock}${COMPANION}holdfast`] : [],
    };
  }

  /** SCAN pattern for every lock key (and older versions' companions) of the locks whose keys start with `keyPrefix`. */
  scanPattern(keyPrefix: string): string {
    return `${globEscape(this.prefix + keyPrefix)}*`;
  }

  /** The Holdfast key of a scanned Redis key, or undefined for a companion key. */
  keyOf(redisKey: string): string | undefined {
    if (!redisKey.startsWith(this.prefix)) return undefined;
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

/**
 * Redis Cluster's rule: the part of a key it hashes is the text between the first "{" and the first
 * "}" after it, if that text is not empty; otherwise the whole key. Undefined: the whole key.
 */
export function hashTagOf(redisKey: string): string | undefined {
  const open = redisKey.indexOf('{');
  if (open < 0) return undefined;
  const close = redisKey.indexOf('}', open + 1);
  return close > open + 1 ? redisKey.slice(open + 1, close) : undefined;
}

/**
 * What a lock's companion names start with, so that Redis hashes them as it hashes the lock key.
 * A lock key without a tag (nearly all) is hashed whole, so its companions are tagged with the
 * whole lock key: `{holdfast:orders}//fence`. A lock key with a tag already (`{tenant}:orders`)
 * keeps it: the companions are `{tenant}//{tenant}:orders//fence`, the tag repeated first so that
 * no user key moves it, and the lock key after it so that no two locks share a companion (the
 * short form `{tenant}:orders//fence` would, for a lock key `{x}`, be the name of lock `x`'s).
 * A lock key with a "}" and no tag (`a}b`) cannot be spelled as a tag (a tag ends at the first "}"):
 * its companions carry a tag found to hash to the lock key's slot, `{slot:1x3}//a}b//fence`.
 */
function companionBase(lock: string): string {
  const tag = hashTagOf(lock);
  if (tag !== undefined) return `{${tag}}${COMPANION}${lock}`;
  if (!lock.includes('}')) return `{${lock}}`;
  return `{${tagForSlot(slotOf(lock))}}${COMPANION}${lock}`;
}

/** Redis glob patterns treat these characters specially; a backslash makes them literal. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
