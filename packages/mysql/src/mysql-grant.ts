import { type BackendGrant, type CallContext, type Extension, NOT_HELD, stillHeld } from '@holdfast/core/backend';

/** The statements on one kind of grant, a plain lock's or a semaphore slot's: each checks key and lock id. */
export interface GrantStatements {
  extend(key: string, lockId: string, ttlMs: number, signal: AbortSignal): Promise<boolean>;
  release(key: string, lockId: string, signal: AbortSignal): Promise<boolean>;
  isHeld(key: string, lockId: string, signal: AbortSignal): Promise<boolean>;
}

/** One grant, a lock or a slot: identified by key and lock id, and every statement on it checks both. */
export class MysqlGrant implements BackendGrant {
  constructor(
    private readonly statements: GrantStatements,
    readonly key: string,
    readonly lockId: string,
    readonly token: bigint,
    readonly acquiredAt: Date,
    readonly expiresAt: Date,
    /** Called once the grant is released or known to be gone (a slot's watch stops). */
    private readonly ended: () => void = () => undefined,
  ) {}

  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    const started = Date.now();
    if (!(await this.statements.extend(this.key, this.lockId, ttlMs, call.signal))) {
      this.ended();
      return NOT_HELD;
    }
    // Our clock's estimate, for lock.expiresAt: core times the lease itself, from when it asked.
    return stillHeld(new Date(started + ttlMs));
  }

  release(call: CallContext): Promise<boolean> {
    this.ended();
    return this.statements.release(this.key, this.lockId, call.signal);
  }

  async isHeld(call: CallContext): Promise<boolean> {
    const held = await this.statements.isHeld(this.key, this.lockId, call.signal);
    if (!held) this.ended();
    return held;
  }
}
