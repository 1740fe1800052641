import type { MongoClient, MongoClientOptions } from 'mongodb';
import type { CreateLockProviderOptions, LockProvider } from '@holdfast/core';
import { createProvider, type ProviderOptions, providerOptions } from '@holdfast/core/backend';
import { createClient, DEFAULT_CALL_TIMEOUT_MS } from './client.js';
import { MongoBackend } from './mongo-backend.js';
import { type DistLockSettings, parseMongoUrl, resolveSettings } from './options.js';
import { newProcessId } from './process-id.js';
import type { ServerInfoReader } from './server-info.js';

export { MongoBackend, mongoCapabilities } from './mongo-backend.js';
export { DistLockCatalog } from './catalog.js';
export { VersionedCatalog } from './versioned-catalog.js';
export type { LockCatalog } from './lock-catalog.js';
export { PingHistory } from './expiry.js';
export { newProcessId, PROCESS_ID_PATTERN } from './process-id.js';
export { readServerStatus, type ServerInfo, type ServerInfoReader } from './server-info.js';
export { LOCKED, UNLOCKED, type LockDocument, type PingDocument, type VersionRecord } from './documents.js';
export {
  DEFAULT_LOCK_EXPIRATION_MS,
  DEFAULT_LOCKS_COLLECTION,
  DEFAULT_PING_INTERVAL_MS,
  DEFAULT_PINGS_COLLECTION,
  DEFAULT_RETRY_INTERVAL_MS,
  type DistLockSettings,
} from './options.js';

export interface MongoProviderOptions extends Partial<DistLockSettings>, Pick<ProviderOptions, 'ttlBelowMinimum' | 'logger'> {
  /** A `mongodb://` or `mongodb+srv://` URL; `holdfast*` query parameters set the options below. */
  readonly url?: string | URL;
  /** An existing client instead of a URL; the provider then leaves it open on close(). */
  readonly client?: MongoClient;
  /** Default: the URL's database. */
  readonly databaseName?: string;
  /**
   * Driver options. Unless set here or in the URL, the adapter bounds the driver by `callTimeoutMs`:
   * serverSelectionTimeoutMS and connectTimeoutMS = callTimeoutMs, socketTimeoutMS = 2 x callTimeoutMs.
   */
  readonly clientOptions?: MongoClientOptions;
  readonly owner?: string;
  /** Longest time one backend call may take, in ms (default 5000); see core's ProviderOptions. */
  readonly callTimeoutMs?: number;
  /** Longest time close() takes, in ms (default 5000). */
  readonly closeTimeoutMs?: number;
  /** The `<port>` part of the process id (default: the OS pid). */
  readonly port?: number;
  /** For tests: how contenders read the server's clock (default: serverStatus). */
  readonly readServerInfo?: ServerInfoReader;
}

export interface MongoLockProvider extends LockProvider {
  /** The adapter side, for diagnostics and tests (process id, held grants, unlock queue). */
  readonly mongo: MongoBackend;
}

export function createMongoProvider(options: MongoProviderOptions): MongoLockProvider {
  const fromUrl = options.url === undefined ? undefined : parseMongoUrl(options.url);
  const settings = resolveSettings({ ...fromUrl?.settings, ...definedOnly(options) });
  const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const client = options.client ?? createClient(fromUrl?.driverUrl, options.clientOptions, callTimeoutMs);
  const backend = new MongoBackend({
    client,
    ownsClient: options.client === undefined,
    databaseName: options.databaseName,
    settings,
    processId: newProcessId(options.port ?? fromUrl?.settings.port),
    commandTimeoutMs: callTimeoutMs,
    ...(options.readServerInfo ? { readServerInfo: options.readServerInfo } : {}),
  });
  const provider = createProvider(backend, providerOptions(options));
  return Object.assign(provider, { mongo: backend });
}

/** Entry point used by `createLockProvider('mongodb://...')`. */
export function createProviderFromUrl(url: string, options: CreateLockProviderOptions = {}): LockProvider {
  return createMongoProvider({ url, ...providerOptions(options), ...(options.adapter ?? {}) });
}

function definedOnly(options: MongoProviderOptions): Partial<DistLockSettings> {
  const picked: Record<string, unknown> = {};
  for (const name of ['locksCollection', 'pingsCollection', 'pingIntervalMs', 'lockExpirationMs', 'retryIntervalMs'] as const) {
    if (options[name] !== undefined) picked[name] = options[name];
  }
  return picked as Partial<DistLockSettings>;
}
