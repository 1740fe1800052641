import type { Capabilities, LockInfo } from '@holdfast/core';
import {
  type BackendGrant,
  type Busy,
  busy,
  type GrantOutcome,
  type GrantRequest,
  granted,
  type LockBackend,
  type ModeRequest,
  type QueuePlace,
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
  writerPreferred: true,
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

  async tryGrantMode(request: ModeRequest): Promise<GrantOutcome> {
    const grant = this.store.tryGrantMode(request);
    return grant ? granted(grant) : busy();
  }

  async modeHolders(key: string): Promise<readonly LockInfo[]> {
    return this.store.readWrite.holders(key);
  }

  waitForChange(key: string, _busy: Busy, options: WaitOptions): Promise<void> {
    return this.store.waitForChange(key, options);
  }

  async leaveQueue(key: string, place: QueuePlace): Promise<void> {
    this.store.leaveQueue(key, place);
  }

  async abandon(request: GrantRequest): Promise<void> {
    this.store.abandon(request);
  }

  async resumeGrant(request: GrantRequest | SlotRequest, held: { readonly token: bigint }): Promise<BackendGrant> {
    return this.store.resume(request, held.token);
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
