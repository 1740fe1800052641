import { createProvider, providerOptions } from '@holdfast/core/backend';
import { freePort } from '@holdfast/test-harness/servers';
import { createMongoBackend } from '../src/backend-factory.js';
import { createMongoProvider, type MongoProviderOptions } from '../src/index.js';
import type { MongoBackend, MongoBackendOptions } from '../src/mongo-backend.js';

/** Short windows so the expiry cases take seconds: ping 250 ms, lease (lockExpiration) 2 s, retry 250 ms. */
export const TEST_PARAMS = 'holdfastPingInterval=250ms&holdfastLockExpiration=2s&holdfastPollInterval=250ms';
export const SHORT_TTL_MS = 2000;

/** The backend URL with the test windows and a collection prefix of its own. */
export function testUrl(baseUrl: string, extra = ''): string {
  const url = new URL(baseUrl);
  for (const [name, value] of new URLSearchParams(`${TEST_PARAMS}${extra ? `&${extra}` : ''}`)) url.searchParams.set(name, value);
  return url.href;
}

export function provider(baseUrl: string, options: Omit<MongoProviderOptions, 'url'> = {}) {
  return createMongoProvider({ url: testUrl(baseUrl), ...options });
}

/**
 * A provider built the way createMongoProvider builds it, with its backend at hand (process id,
 * pending unlocks) and, optionally, a contender's view of the server's clock replaced.
 */
export function providerWithBackend(
  baseUrl: string,
  options: Omit<MongoProviderOptions, 'url'> = {},
  internals: Pick<MongoBackendOptions, 'readServerInfo' | 'chainTiming'> = {},
) {
  const backend: MongoBackend = createMongoBackend({ url: testUrl(baseUrl), ...options }, internals);
  return { locks: createProvider(backend, providerOptions(options)), backend };
}

/** A closed port: the driver gives up after 500 ms of server selection. */
export async function unreachableUrl(): Promise<string> {
  const port = await freePort();
  return testUrl(`mongodb://127.0.0.1:${port}/holdfast?serverSelectionTimeoutMS=500&connectTimeoutMS=500`);
}
