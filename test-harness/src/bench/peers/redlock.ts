import type { Redis } from 'ioredis';
import type { LockClient, LockSubject } from '../types.js';
import { quitAll } from './redis-connections.js';

/** What the bench uses of both Redlock packages (redlock 5 beta and its fork @sesamecare-oss/redlock). */
interface Redlock {
  acquire(resources: string[], duration: number, settings?: { retryCount?: number }): Promise<{ release(): Promise<unknown> }>;
}
type RedlockClass = new (clients: Redis[], settings?: { retryCount?: number }) => Redlock;

/** Peers' leases: long enough that nothing expires during a measurement; they do not renew. */
export const PEER_TTL_MS = 30_000;
/** Retries a waiting Redlock client makes: with the default 200 +- 100 ms apart, a few minutes. */
const WAIT_RETRIES = 1000;
const REDLOCK_NOTE = `polls every retryDelay 200 ms +- retryJitter 100 ms; retryCount ${WAIT_RETRIES} when waiting`;

export async function redlockBeta(): Promise<RedlockClass> {
  return ((await import('redlock' as string)) as { default: RedlockClass }).default;
}

export async function sesameRedlock(): Promise<RedlockClass> {
  return (await import('@sesamecare-oss/redlock')).Redlock as unknown as RedlockClass;
}

/**
 * A Redlock package as a bench subject. Each client has its own connection to each of `urls` (one
 * URL: a single server; three: a quorum, as Redlock intends).
 */
export function redlockSubject(subject: string, Impl: RedlockClass, urls: readonly string[], connect: (url: string) => Redis): LockSubject {
  return {
    subject,
    note: REDLOCK_NOTE,
    pollPeriodMs: 300,
    async client(): Promise<LockClient> {
      const connections = urls.map(connect);
      const redlock = new Impl(connections, { retryCount: WAIT_RETRIES });
      const attempt = async (key: string, retryCount: number): Promise<(() => Promise<void>) | null> => {
        try {
          const lock = await redlock.acquire([key], PEER_TTL_MS, { retryCount });
          return async () => void (await lock.release());
        } catch {
          return null; // ExecutionError: the key stayed busy for every attempt
        }
      };
      return {
        tryOnce: (key) => attempt(key, 0),
        // Redlock cannot stop a wait: after the signal it simply takes the lock, and the caller releases it.
        acquire: (key) => attempt(key, WAIT_RETRIES),
        close: () => quitAll(connections),
      };
    },
  };
}
