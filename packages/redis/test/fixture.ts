import type { LockProvider } from '@holdfast/core';
import { startRedis } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import { afterAll, afterEach } from 'vitest';
import { createRedisProvider, type RedisProviderOptions } from '../src/index.js';
import { type RedisProcess, startRedisProcess } from './redis-process.js';

// What a Redis test file sets up before its tests: its servers, an admin connection, and the
// providers its tests open. Each helper registers its own clean-up (afterAll / afterEach).

/** Generous: stopping servers on a loaded 2-core machine. */
const STOP_BOUND_MS = 60_000;

/** An admin connection to `url` (none without a URL), disconnected after the file's tests, then `stop` runs. */
export function adminConnection(url: string | null | undefined, stop?: () => Promise<unknown>): Redis | undefined {
  const admin = url ? new Redis(url) : undefined;
  afterAll(async () => {
    admin?.disconnect();
    await stop?.();
  }, STOP_BOUND_MS);
  return admin;
}

/** A redis-server of the file's own and an admin connection to it; nulls when redis-server is not installed. */
export async function serverWithAdmin(): Promise<{ server: { readonly url: string } | null; admin: Redis | undefined }> {
  const server = (await needLocalBinary('redis-server')) ? null : await startRedis();
  return { server, admin: adminConnection(server?.url, () => server?.stop() ?? Promise.resolve()) };
}

/**
 * Three redis-server processes of the file's own (none when redis-server is not installed), resumed
 * and stopped after the file's tests. `argsOf(i)` gives node i its extra arguments.
 */
export async function threeNodes(argsOf: (index: number) => readonly string[] = () => []): Promise<RedisProcess[]> {
  const nodes = (await needLocalBinary('redis-server')) ? [] : await Promise.all([0, 1, 2].map((i) => startRedisProcess(argsOf(i))));
  afterAll(async () => {
    for (const node of nodes) node.resume();
    await Promise.all(nodes.map((node) => node.stop()));
  }, STOP_BOUND_MS);
  return nodes;
}

/** The providers a file's tests open, and a way to open one that is tracked. */
export interface TrackedProviders {
  /** Closed after each test; a test that creates a provider itself pushes it here. */
  readonly providers: LockProvider[];
  /** createRedisProvider(options), closed after the test. */
  open(options: RedisProviderOptions): LockProvider;
}

/**
 * Providers closed after each test. `beforeClose` runs first, for what would keep a release from
 * landing (a paused server or client, a stopped child holding a key).
 */
export function providersClosedAfterEach(beforeClose?: () => unknown): TrackedProviders {
  const providers: LockProvider[] = [];
  afterEach(async () => {
    await beforeClose?.();
    await Promise.allSettled(providers.splice(0).map((provider) => provider.close()));
  });
  return {
    providers,
    open(options) {
      const provider = createRedisProvider(options);
      providers.push(provider);
      return provider;
    },
  };
}
