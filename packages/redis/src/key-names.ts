/** The default namespace: without one, a lock key could be an application's own data key. */
export const DEFAULT_PREFIX = 'holdfast:';

/**
 * Redis names derived from a Holdfast key. The lock key itself is `prefix + key`, the resource
 * name the redlock package uses with the same prefix, so with `prefix: ''` both libraries exclude
 * each other. Companion names add "//", which no valid Holdfast key contains, so they can never
 * collide with another lock's key.
 */
export class KeyNames {
  constructor(
    readonly prefix: string,
    private readonly db: number,
  ) {}

  lock(key: string): string {
    return this.prefix + key;
  }

  /** Hash with the never-reset fencing counter ("fence"). */
  fence(key: string): string {
    return `${this.prefix}${key}//holdfast`;
  }

  /** Hash with the current holder's metadata; expires with the lock key. */
  holder(key: string): string {
    return `${this.prefix}${key}//holder`;
  }

  /** Published by the release scripts. Pub/sub channels are not per database, so the db is part of it. */
  releaseChannel(key: string): string {
    return `holdfast:released@${this.db}:${this.prefix}${key}`;
  }

  /** Keyspace notifications, when the server has them enabled: wake-ups for redlock releases and expiries. */
  keyspaceChannel(key: string): string {
    return `__keyspace@${this.db}__:${this.prefix}${key}`;
  }
}
