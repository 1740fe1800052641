import type { MongoClient, MongoClientOptions } from 'mongodb';
import type { CreateLockProviderOptions, LockProvider } from '@holdfast/core';
// Core's default per-call timeout also bounds the driver unless the URL says otherwise.
import { checkOptionNames, createProvider, DEFAULT_CALL_TIMEOUT_MS, type ProviderOptions, providerOptions } from '@holdfast/core/backend';
import { createClient } from './client.js';
import { MongoBackend } from './mongo-backend.js';
import { InvalidArgumentError } from '@holdfast/core';
import { type DistLockSettings, parseMongoUrl, RENAMED_OPTIONS, resolveSettings } from './options.js';
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
  DEFAULT_POLL_INTERVAL_MS,
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

/** What `createLockProvider(url, { adapter })` may set for MongoDB; url and the provider-level options go elsewhere. */
const ADAPTER_OPTIONS = [
  'client', 'databaseName', 'clientOptions', 'pingIntervalMs', 'lockExpirationMs', 'pollIntervalMs', 'locksCollection', 'pingsCollection', 'port', 'readServerInfo',
] as const;

const PROVIDER_OPTIONS: readonly string[] = ['url', 'owner', 'callTimeoutMs', 'closeTimeoutMs', 'ttlBelowMinimum', 'logger', ...ADAPTER_OPTIONS];

function checkNames(names: readonly string[], known: readonly string[], where: string): void {
  checkOptionNames(names, { backend: 'MongoDB', known, renamed: RENAMED_OPTIONS, where });
}

export function createMongoProvider(options: MongoProviderOptions): MongoLockProvider {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object');
  checkNames(Object.keys(options), PROVIDER_OPTIONS, '');
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
  const adapter = options.adapter ?? {};
  if (adapter === null || typeof adapter !== 'object') throw new InvalidArgumentError('adapter', 'expected an object of MongoDB settings');
  checkNames(Object.keys(adapter), ADAPTER_OPTIONS, 'adapter.');
  return createMongoProvider({ ...adapter, url, ...providerOptions(options) });
}

function definedOnly(options: MongoProviderOptions): Partial<DistLockSettings> {
  const picked: Record<string, unknown> = {};
  for (const name of ['locksCollection', 'pingsCollection', 'pingIntervalMs', 'lockExpirationMs', 'pollIntervalMs'] as const) {
    if (options[name] !== undefined) picked[name] = options[name];
  }
  return picked as Partial<DistLockSettings>;
}
