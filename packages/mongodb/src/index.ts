import type { CreateLockProviderOptions, LockProvider } from '@holdfast/core';
import { createProvider, providerOptions } from '@holdfast/core/backend';
import { createMongoBackend } from './backend-factory.js';
import { checkAdapterOptions, checkProviderOptions, type MongoProviderOptions } from './provider-options.js';

export { MONGODB_CAPABILITIES } from './capabilities.js';
export type { LockDocument, PingDocument } from './documents.js';
export type { VersionRecord } from './ferretdb/index.js';
export type { DistLockSettings } from './options.js';
export type { MongoProviderOptions } from './provider-options.js';

/** Locks on MongoDB (or FerretDB) with MongoDB's own distributed-lock design; creating one does not connect. */
export function createMongoProvider(options: MongoProviderOptions): LockProvider {
  checkProviderOptions(options);
  // Checked before the driver client is created with timeouts taken from callTimeoutMs.
  const common = providerOptions(options);
  return createProvider(createMongoBackend(options), common);
}

/** Entry point used by `createLockProvider('mongodb://...')`. */
export function createProviderFromUrl(url: string, options: CreateLockProviderOptions = {}): LockProvider {
  const adapter = options.adapter ?? {};
  checkAdapterOptions(adapter);
  return createMongoProvider({ ...adapter, url, ...providerOptions(options) });
}
