import type { LockProvider } from '@holdfast/core';
import type { LockClient, LockSubject } from './types.js';

/** The longest a bench acquire() waits: far beyond any hand-off or contention slice, yet bounded. */
export const WAIT_MS = 120_000;

/**
 * Holdfast through its public API only (createLockProvider / adapter factories, tryAcquire, acquire,
 * release), so that the bench keeps working whatever the adapters do inside. Each client is a
 * provider of its own, as a separate process would have.
 */
export function holdfastSubject(
  subject: string,
  create: () => Promise<LockProvider>,
  how: { pollPeriodMs?: number; note?: string } = {},
): LockSubject {
  return {
    subject,
    pollPeriodMs: how.pollPeriodMs ?? 0,
    ...(how.note ? { note: how.note } : {}),
    client: async () => providerClient(await create()),
  };
}

export function providerClient(provider: LockProvider): LockClient {
  return {
    async tryOnce(key) {
      const lock = await provider.tryAcquire(key);
      return lock ? () => lock.release() : null;
    },
    async acquire(key, signal) {
      try {
        const lock = await provider.acquire(key, { signal, waitMs: WAIT_MS });
        return () => lock.release();
      } catch (error) {
        if (signal.aborted) return null;
        throw error;
      }
    },
    close: () => provider.close(),
  };
}
