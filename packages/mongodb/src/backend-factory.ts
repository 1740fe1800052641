import { DEFAULT_CALL_TIMEOUT_MS } from '@holdfast/core/backend';
import { createClient } from './client.js';
import { MongoBackend, type MongoBackendOptions } from './mongo-backend.js';
import { parseMongoUrl, resolveSettings } from './options.js';
import { newProcessId } from './process-id.js';
import { type MongoProviderOptions, settingsIn } from './provider-options.js';

/**
 * The backend for checked options, without connecting: settings from the URL overridden by the
 * options, a driver client bounded by the call timeout (core's default unless given), a process id.
 */
export function createMongoBackend(
  options: MongoProviderOptions,
  internals: Pick<MongoBackendOptions, 'readServerInfo' | 'chainTiming'> = {},
): MongoBackend {
  const fromUrl = options.url === undefined ? undefined : parseMongoUrl(options.url);
  const settings = resolveSettings({ ...fromUrl?.settings, ...settingsIn(options) });
  const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  return new MongoBackend({
    client: options.client ?? createClient(fromUrl?.driverUrl, options.clientOptions, callTimeoutMs),
    ownsClient: options.client === undefined,
    databaseName: options.databaseName,
    settings,
    processId: newProcessId(options.port ?? fromUrl?.settings.port),
    commandTimeoutMs: callTimeoutMs,
    ...internals,
  });
}
