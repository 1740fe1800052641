import { type CommonProviderOptions, InvalidArgumentError } from '@holdfast/core';
import { COMMON_PROVIDER_OPTION_NAMES, checkOptionNames } from '@holdfast/core/backend';
import type { MongoClient, MongoClientOptions } from 'mongodb';
import { type DistLockSettings, RENAMED_OPTIONS } from './options.js';

/** Options of `createMongoProvider`: where the server is, MongoDB's distlock settings, and core's provider settings. */
export interface MongoProviderOptions extends Partial<DistLockSettings>, CommonProviderOptions {
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
  /** The `<port>` part of the process id (default: the OS pid). */
  readonly port?: number;
}

/** What `createLockProvider(url, { adapter })` may set for MongoDB; url and the provider-level options go elsewhere. */
export const ADAPTER_OPTIONS = [
  'client',
  'databaseName',
  'clientOptions',
  'pingIntervalMs',
  'lockExpirationMs',
  'pollIntervalMs',
  'locksCollection',
  'pingsCollection',
  'port',
] as const;

const PROVIDER_OPTIONS: readonly string[] = ['url', ...COMMON_PROVIDER_OPTION_NAMES, ...ADAPTER_OPTIONS];

/** Refuses anything but an object of known option names (renamed ones by their new name). */
export function checkProviderOptions(options: unknown): asserts options is MongoProviderOptions {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object');
  checkOptionNames(Object.keys(options), { backend: 'MongoDB', known: PROVIDER_OPTIONS, renamed: RENAMED_OPTIONS, where: '' });
}

export function checkAdapterOptions(adapter: unknown): asserts adapter is Record<string, unknown> {
  if (adapter === null || typeof adapter !== 'object') throw new InvalidArgumentError('adapter', 'expected an object of MongoDB settings');
  checkOptionNames(Object.keys(adapter), { backend: 'MongoDB', known: ADAPTER_OPTIONS, renamed: RENAMED_OPTIONS, where: 'adapter.' });
}

/** The distlock settings given as options (undefined ones left out, so the URL's apply). */
export function settingsIn(options: MongoProviderOptions): Partial<DistLockSettings> {
  const picked: Record<string, unknown> = {};
  for (const name of ['locksCollection', 'pingsCollection', 'pingIntervalMs', 'lockExpirationMs', 'pollIntervalMs'] as const) {
    if (options[name] !== undefined) picked[name] = options[name];
  }
  return picked as Partial<DistLockSettings>;
}
