import type { Capabilities } from '@holdfast/core';
import { MAX_TTL_MS } from '@holdfast/core/backend';
import { type DistLockSettings, resolveSettings } from './options.js';

/** What a MongoDB provider offers with these settings (the ping interval and lease set the TTL bounds). */
export function mongoCapabilities(settings: DistLockSettings): Capabilities {
  return Object.freeze({
    minTtlMs: 3 * settings.pingIntervalMs,
    maxTtlMs: MAX_TTL_MS,
    defaultTtlMs: settings.lockExpirationMs,
    fencing: 'strict',
    fifo: false,
    wakeUp: 'change-stream-or-poll',
    crossProcess: true,
    // Two observations a lease apart; the first may come up to a lease late (a contender arriving just
    // as the lease ends), and each is up to one poll interval (and the last ping one interval) late.
    expiryGraceMs: settings.lockExpirationMs + 2 * settings.pollIntervalMs + settings.pingIntervalMs,
    renewal: 'backend',
    // Read-write locks (FerretDB): no writerPreferred. Waiters retry when the key watch sees a change
    // or at a poll, with no line of places, so a steady stream of overlapping readers can keep a
    // waiting writer out (docs/semantics-mongodb.md).
  });
}

/** Why a provider connected to mongod (not FerretDB) has no semaphores. */
export const MONGOD_NO_SEMAPHORES =
  'on mongod the adapter changes lock documents in place with findAndModify; slots are built on the version records used on FerretDB (see docs/semaphores.md)';

/** Why a provider connected to mongod (not FerretDB) has no read-write locks. */
export const MONGOD_NO_READ_WRITE =
  'on mongod the adapter changes lock documents in place with findAndModify; read-write locks are built on the version records used on FerretDB, as semaphores are (see docs/read-write.md)';

/**
 * The capabilities once the server is known to be mongod: no semaphores, no read-write locks. Known
 * only after the first connection (buildInfo, see connection.ts); a provider does not connect when it is created.
 */
export function mongodCapabilities(capabilities: Capabilities): Capabilities {
  return Object.freeze({ ...capabilities, noSemaphores: MONGOD_NO_SEMAPHORES, noReadWrite: MONGOD_NO_READ_WRITE });
}

/**
 * The capabilities of a MongoDB provider with MongoDB's own settings (ping every 30 s, lease 15 min,
 * poll 500 ms). A provider's `capabilities` reflect its own settings.
 */
export const MONGODB_CAPABILITIES: Capabilities = mongoCapabilities(resolveSettings({}));
