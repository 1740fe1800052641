import type { Capabilities, LockInfo } from '@holdfast/core';
import {
  type BackendGrant,
  type Busy,
  busy,
  type GrantOutcome,
  type GrantRequest,
  granted,
  type LockBackend,
  type SlotRequest,
  type WaitOptions,
} from '@holdfast/core/backend';
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

  async tryGrant(request: GrantRequest): Promise<GrantOutcome> {
    const grant = this.store.tryGrant(request);
    return grant ? granted(grant) : busy();
  }

  async tryGrantSlot(request: SlotRequest): Promise<GrantOutcome> {
    const grant = this.store.tryGrantSlot(request);
    return grant ? granted(grant) : busy();
  }

  async slotHolders(key: string): Promise<readonly LockInfo[]> {
    return this.store.slots.holders(key);
  }

  /** Semaphore waits and observers come here: plain lock waiters queue in acquireQueued's FIFO hand-off. */
  async waitForChange(key: string, _busy: Busy, options: WaitOptions): Promise<void> {
    await this.store.changes.wait(key, options);
  }

  acquireQueued(request: GrantRequest, wait: { signal: AbortSignal; deadline: number }): Promise<BackendGrant | null> {
    return this.store.acquireQueued(request, wait);
  }

  async abandon(request: GrantRequest): Promise<void> {
    this.store.abandon(request);
  }

  async inspect(key: string): Promise<LockInfo | null> {
    return this.store.inspect(key);
  }

  async list(prefix: string): Promise<readonly LockInfo[]> {
    return this.store.list(prefix);
  }

  async forceRelease(key: string): Promise<boolean> {
    return this.store.forceRelease(key);
  }

  async close(): Promise<void> {}
}
