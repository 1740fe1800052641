import type { CallContext } from '@holdfast/core/backend';
import type { Db } from 'mongodb';
import type { LockDocument } from './documents.js';
import { PingHistory } from './expiry.js';
import type { PingStore } from './ping-store.js';
import type { ServerInfoReader } from './server-info.js';

/** What one observation of a held lock concluded. */
export type Verdict =
  | { readonly expired: true }
  | { readonly expired: false /** Local time from which another observation could find it expired. */; readonly judgeableAt: number };

/**
 * MongoDB's isLockExpired as a contender runs it: read the holder's ping (unless its lock is not
 * renewed by pings) and the server's clock, and compare with this process's last observation of
 * the key (expiry.ts).
 */
export class ExpiryCheck {
  private readonly history = new PingHistory();

  constructor(
    private readonly db: Db,
    private readonly pings: PingStore,
    private readonly readServerInfo: ServerInfoReader,
    /** The lease of documents that carry none (written by MongoDB itself): lockExpiration. */
    private readonly defaultLeaseMs: number,
  ) {}

  async observe(current: LockDocument, call: CallContext): Promise<Verdict> {
    const renew = current.renew !== false;
    const ping = renew ? ((await this.pings.getPing(current.process, call)) ?? new Date(0)) : null;
    const started = performance.now();
    const server = await this.readServerInfo(this.db, call.signal);
    const roundTripMs = performance.now() - started;
    const lease = current.lease ?? this.defaultLeaseMs;
    const observation = { process: current.process, ping, ts: current.ts, extended: current.extended ?? null, lease };
    const leftMs = this.history.observe(current._id, observation, server, roundTripMs);
    return leftMs <= 0 ? { expired: true } : { expired: false, judgeableAt: Date.now() + leftMs };
  }

  /** The key changed hands through this process: its old observation proves nothing any more. */
  forget(key: string): void {
    this.history.forget(key);
  }
}
