import type { Redis } from 'ioredis';
import type { LockClient, LockSubject } from '../types.js';
import { quitAll } from './redis-connections.js';
import { PEER_TTL_MS } from './redlock.js';

/** What the bench uses of @verrou/core 0.5 (a lock of one key; acquire() polls every retry.delay, 250 ms). */
interface VerrouLock {
  acquire(options?: { retry?: { timeout?: number } }): Promise<boolean>;
  acquireImmediately(): Promise<boolean>;
  release(): Promise<void>;
}
interface Verrou {
  createLock(name: string, ttl?: number): VerrouLock;
}

const NOTE = 'polls every retry.delay 250 ms (its default)';
const WAIT_TIMEOUT_MS = 120_000;

/** verrou's Redis store; each client has its own connection. */
export function verrouRedisSubject(url: string, connect: (url: string) => Redis): LockSubject {
  return {
    subject: 'verrou 0.5 redis',
    note: NOTE,
    pollPeriodMs: 250,
    async client() {
      const { Verrou } = await import('@verrou/core');
      const { redisStore } = await import('@verrou/core/drivers/redis');
      const connection = connect(url);
      const verrou = new Verrou({ default: 'redis', stores: { redis: { driver: redisStore({ connection }) } } });
      return verrouClient(verrou, () => quitAll([connection]));
    },
  };
}

/** verrou's memory store: one store for every client, as locks of one process share one store. */
export function verrouMemorySubject(): LockSubject {
  let shared: Promise<Verrou> | undefined;
  const store = async (): Promise<Verrou> => {
    const { Verrou } = await import('@verrou/core');
    const { memoryStore } = await import('@verrou/core/drivers/memory');
    return new Verrou({ default: 'memory', stores: { memory: { driver: memoryStore() } } });
  };
  return {
    subject: 'verrou 0.5 memory',
    note: NOTE,
    pollPeriodMs: 250,
    client: async () => verrouClient(await (shared ??= store()), async () => undefined),
  };
}

function verrouClient(verrou: Verrou, close: () => Promise<void>): LockClient {
  return {
    async tryOnce(key) {
      const lock = verrou.createLock(key, PEER_TTL_MS);
      return (await lock.acquireImmediately()) ? () => lock.release() : null;
    },
    // verrou cannot stop a wait: after the signal it takes the lock, and the caller releases it.
    async acquire(key) {
      const lock = verrou.createLock(key, PEER_TTL_MS);
      return (await lock.acquire({ retry: { timeout: WAIT_TIMEOUT_MS } })) ? () => lock.release() : null;
    },
    close,
  };
}
