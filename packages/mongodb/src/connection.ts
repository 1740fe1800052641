import { ProviderClosedError } from '@holdfast/core';
import type { Db, MongoClient, ObjectId } from 'mongodb';
import type { Bound } from './bounded.js';
import { ExpiryCheck } from './expiry-check.js';
import { type ChainTiming, VersionedCatalog } from './ferretdb/index.js';
import { Inspection } from './inspection.js';
import type { LiveGrants } from './live-grants.js';
import type { LockCatalog } from './lock-catalog.js';
import { DistLockCatalog } from './mongod-catalog.js';
import type { DistLockSettings } from './options.js';
import { PingStore } from './ping-store.js';
import { Pinger } from './pinger.js';
import { connectUnlessRefused } from './refused.js';
import type { ServerInfoReader } from './server-info.js';
import type { UnlockQueue } from './unlock-queue.js';
import { WakeUps } from './wake-ups.js';

export interface ConnectionOptions {
  readonly client: MongoClient;
  readonly databaseName: string | undefined;
  readonly settings: DistLockSettings;
  readonly processId: string;
  /** Bounds the adapter's own commands (connecting, ping, holder check, queued unlocks). */
  readonly commandTimeoutMs: number;
  readonly readServerInfo: ServerInfoReader;
  readonly grants: LiveGrants;
  readonly unlocks: UnlockQueue;
  /** True for a ts this process holds or is still trying to grab: anything else of ours is an orphan. */
  readonly claims: (ts: ObjectId) => boolean;
  readonly isClosed: () => boolean;
  /** FerretDB's act window and prune delay (tests shorten them). */
  readonly chainTiming?: ChainTiming | undefined;
}

/** The runtime parts of a provider instance, created once the server has answered. */
export interface Connected {
  readonly db: Db;
  readonly catalog: LockCatalog;
  readonly pings: PingStore;
  readonly pinger: Pinger;
  readonly wakeUps: WakeUps;
  readonly expiry: ExpiryCheck;
  readonly inspection: Inspection;
}

/**
 * Connects, picks the lock commands for the server (FerretDB: version records, detected from
 * buildInfo; otherwise mongod's findAndModify), creates indexes, pings once and starts the pinger.
 */
export async function connect(options: ConnectionOptions): Promise<Connected> {
  if (options.isClosed()) throw new ProviderClosedError('mongodb');
  const { client, settings, processId, readServerInfo } = options;
  const bound: Bound = { signal: AbortSignal.timeout(options.commandTimeoutMs) };
  await connectUnlessRefused(client);
  const db = client.db(options.databaseName);
  const buildInfo = await db.command({ buildInfo: 1 }, { signal: bound.signal });
  const ferretdb = typeof buildInfo['ferretdbVersion'] === 'string';
  const catalog = ferretdb
    ? new VersionedCatalog(db, settings.locksCollection, processId, readServerInfo, options.chainTiming)
    : new DistLockCatalog(db, settings.locksCollection, processId);
  const pings = new PingStore(db, settings.pingsCollection, processId);
  await catalog.ensureIndexes(bound);
  await pings.ensureIndexes(bound);
  const pingSentAt = Date.now();
  await pings.ping(bound);
  const pinger = new Pinger(
    {
      catalog,
      pings,
      grants: options.grants,
      unlocks: options.unlocks,
      claims: options.claims,
      intervalMs: settings.pingIntervalMs,
      commandTimeoutMs: options.commandTimeoutMs,
    },
    pingSentAt,
  );
  if (options.isClosed()) {
    await pings.stopPing(bound).catch(() => undefined);
    throw new ProviderClosedError('mongodb');
  }
  pinger.start();
  return {
    db,
    catalog,
    pings,
    pinger,
    wakeUps: new WakeUps(catalog, settings.pollIntervalMs, options.commandTimeoutMs),
    expiry: new ExpiryCheck(db, pings, readServerInfo, settings.lockExpirationMs),
    inspection: new Inspection(db, catalog, pings, readServerInfo, settings.lockExpirationMs),
  };
}
