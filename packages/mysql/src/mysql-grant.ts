import { type BackendGrant, type CallContext, type Extension, NOT_HELD, stillHeld } from '@holdfast/core/backend';
import type { LockTable } from './lock-table.js';

/** One grant: its row is identified by key and lock id, and every statement on it checks both. */
export class MysqlGrant implements BackendGrant {
  constructor(
    private readonly table: LockTable,
    readonly key: string,
    readonly lockId: string,
    readonly token: bigint,
    readonly acquiredAt: Date,
    readonly expiresAt: Date,
  ) {}

  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    const started = Date.now();
    // Our clock's estimate, for lock.expiresAt: core times the lease itself, from when it asked.
    return (await this.table.extend(this.key, this.lockId, ttlMs, call.signal)) ? stillHeld(new Date(started + ttlMs)) : NOT_HELD;
  }

  release(call: CallContext): Promise<boolean> {
    return this.table.release(this.key, this.lockId, call.signal);
  }

  isHeld(call: CallContext): Promise<boolean> {
    return this.table.isHeld(this.key, this.lockId, call.signal);
  }
}
