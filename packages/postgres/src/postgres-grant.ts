import { type BackendGrant, type CallContext, type Extension, NOT_HELD, stillHeld } from '@holdfast/core/backend';
import type { ExtendBatcher } from './extend-batcher.js';
import type { LockTable } from './lock-table.js';

/** One grant: its row is identified by key and lock id, and every statement on it checks both. */
export class PostgresGrant implements BackendGrant {
  constructor(
    private readonly table: LockTable,
    private readonly batcher: ExtendBatcher,
    readonly key: string,
    readonly lockId: string,
    readonly token: bigint,
    readonly acquiredAt: Date,
    readonly expiresAt: Date,
  ) {}

  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    const expiresAt = await this.batcher.extend({ key: this.key, lockId: this.lockId, ttlMs }, call.signal);
    return expiresAt ? stillHeld(expiresAt) : NOT_HELD;
  }

  release(call: CallContext): Promise<boolean> {
    return this.table.release(this.key, this.lockId, call.signal);
  }

  isHeld(call: CallContext): Promise<boolean> {
    return this.table.isHeld(this.key, this.lockId, call.signal);
  }
}
