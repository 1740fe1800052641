import type { Redis } from 'ioredis';
import type { LockSubject } from '../types.js';
import { quitAll } from './redis-connections.js';
import { PEER_TTL_MS } from './redlock.js';

const WAIT_TIMEOUT_MS = 120_000;

/** redis-semaphore 5's Mutex: SET NX PX, retried every retryInterval (10 ms), refreshed at 80 % of lockTimeout. */
export function redisSemaphoreSubject(url: string, connect: (url: string) => Redis): LockSubject {
  return {
    subject: 'redis-semaphore 5 Mutex',
    note: `polls every retryInterval 10 ms (its default); acquireTimeout ${WAIT_TIMEOUT_MS / 1000} s`,
    pollPeriodMs: 10,
    async client() {
      const { Mutex } = await import('redis-semaphore');
      const connection = connect(url);
      const mutex = (key: string) => new Mutex(connection, key, { lockTimeout: PEER_TTL_MS, acquireTimeout: WAIT_TIMEOUT_MS });
      return {
        async tryOnce(key) {
          const lock = mutex(key);
          return (await lock.tryAcquire()) ? () => lock.release() : null;
        },
        async acquire(key, signal) {
          const lock = mutex(key);
          try {
            await lock.acquire(signal);
            return () => lock.release();
          } catch {
            return null; // aborted by the signal, or acquireTimeout passed
          }
        },
        close: () => quitAll([connection]),
      };
    },
  };
}
