import type { Capabilities, LockInfo } from '@holdfast/core';
import type { Grant, GrantRequest, LockBackend } from '@holdfast/core/backend';
import type { MemoryStore } from './memory-store.js';

export const MEMORY_CAPABILITIES: Capabilities = Object.freeze({
  minTtlMs: 10,
  maxTtlMs: 7 * 24 * 3_600_000,
  defaultTtlMs: 30_000,
  fencing: 'strict',
  fifo: true,
  wakeUp: 'event',
  crossProcess: false,
  expiryGraceMs: 0,
  renewal: 'per-lock',
});

/** One provider's view of a shared MemoryStore. */
export class MemoryBackend implements LockBackend {
  readonly name = 'memory';
  readonly capabilities = MEMORY_CAPABILITIES;

  constructor(private readonly store: MemoryStore) {}

  async tryGrant(request: GrantRequest): Promise<Grant | null> {
    return this.store.tryGrant(request);
  }

  acquireQueued(request: GrantRequest, wait: { signal: AbortSignal; deadline: number }): Promise<Grant | null> {
    return this.store.acquireQueued(request, wait);
  }

  async extend(key: string, lockId: string, ttlMs: number): Promise<Date | undefined> {
    return this.store.extend(key, lockId, ttlMs);
  }

  async release(key: string, lockId: string): Promise<boolean> {
    return this.store.release(key, lockId);
  }

  async isHeld(key: string, lockId: string): Promise<boolean> {
    return this.store.isHeld(key, lockId);
  }

  async inspect(key: string): Promise<LockInfo | null> {
    return this.store.inspect(key);
  }

  async forceRelease(key: string): Promise<boolean> {
    return this.store.forceRelease(key);
  }

  async close(): Promise<void> {}
}
