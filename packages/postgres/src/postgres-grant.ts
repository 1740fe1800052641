import type { ExtendItem } from '@holdfast/core/backend';
import { type BackendGrant, type CallContext, type Extension, NOT_HELD, stillHeld } from '@holdfast/core/backend';
import type { ReleaseListener } from './release-listener.js';

/** The statements on one kind of grant, a plain lock's or a semaphore slot's: each checks key and lock id. */
export interface GrantStatements {
  /** The new expiry, or null when no longer held (extensions are batched). */
  extend(item: ExtendItem, signal: AbortSignal): Promise<Date | null>;
  release(key: string, lockId: string, signal: AbortSignal): Promise<boolean>;
  isHeld(key: string, lockId: string, signal: AbortSignal): Promise<boolean>;
}

/**
 * One grant, a lock or a slot, identified by key and lock id. While it lasts it also listens for a
 * forced release of its key, so that its holder is told at once, not at its next renewal.
 */
export class PostgresGrant implements BackendGrant {
  private readonly done = new AbortController();
  /** Local time the lease ends, as far as this grant knows: how long to keep listening. */
  private leaseEnd: number;

  constructor(
    private readonly statements: GrantStatements,
    private readonly listener: ReleaseListener,
    readonly key: string,
    readonly lockId: string,
    readonly token: bigint,
    readonly acquiredAt: Date,
    readonly expiresAt: Date,
    onLost: (detail: string) => void,
  ) {
    this.leaseEnd = Date.now() + (expiresAt.getTime() - acquiredAt.getTime());
    void this.watchForcedRelease(onLost);
  }

  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    const expiresAt = await this.statements.extend({ key: this.key, lockId: this.lockId, ttlMs }, call.signal);
    if (!expiresAt) {
      this.done.abort();
      return NOT_HELD;
    }
    this.leaseEnd = Date.now() + ttlMs;
    return stillHeld(expiresAt);
  }

  async release(call: CallContext): Promise<boolean> {
    this.done.abort();
    return this.statements.release(this.key, this.lockId, call.signal);
  }

  async isHeld(call: CallContext): Promise<boolean> {
    const held = await this.statements.isHeld(this.key, this.lockId, call.signal);
    if (!held) this.done.abort();
    return held;
  }

  private async watchForcedRelease(onLost: (detail: string) => void): Promise<void> {
    for (;;) {
      const leftMs = this.leaseEnd - Date.now();
      if (this.done.signal.aborted || leftMs <= 0) return;
      const bound = await this.listener.forcedRelease(this.key, { signal: this.done.signal, timeoutMs: leftMs });
      if (bound === 'closed') return;
      if (bound !== undefined && bound >= this.token) {
        this.done.abort();
        return onLost('force-released by an administrator');
      }
    }
  }
}
