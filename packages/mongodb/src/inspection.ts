import type { LockInfo } from '@holdfast/core';
import type { CallContext } from '@holdfast/core/backend';
import type { Db } from 'mongodb';
import { LOCKED, type LockDocument } from './documents.js';
import type { LockCatalog } from './lock-catalog.js';
import type { PingStore } from './ping-store.js';
import type { ServerInfoReader } from './server-info.js';

/**
 * inspect() and list(): the lock documents as they stand, with each holder judged on the server's
 * clock. A lock renewed by pings is held while its process's last ping is younger than its lease; a
 * lock that is not (autoRenew: false) until its lease after the grant or the last extend. Past that
 * point its holder has given it up (the pinger's and core's safety deadlines come earlier), although
 * a contender may still need one more observation before it takes it over.
 */
export class Inspection {
  constructor(
    private readonly db: Db,
    private readonly catalog: LockCatalog,
    private readonly pings: PingStore,
    private readonly readServerInfo: ServerInfoReader,
    /** The lease of documents that carry none (written by MongoDB itself): lockExpiration. */
    private readonly defaultLeaseMs: number,
  ) {}

  async inspect(key: string, call: CallContext): Promise<LockInfo | null> {
    const current = await this.catalog.getLockByName(key, call);
    if (current?.state !== LOCKED) return null;
    return (await this.judge([current], call))[0] ?? null;
  }

  /** Every held lock under `prefix`, sorted by key as core sorts held(). */
  async list(prefix: string, call: CallContext): Promise<LockInfo[]> {
    const locked = (await this.catalog.lockedUnder(prefix, call)).filter((lock) => lock._id.startsWith(prefix));
    const infos = await this.judge(locked, call);
    return infos.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /** The locks whose holders still hold them, as LockInfo. */
  private async judge(locks: readonly LockDocument[], call: CallContext): Promise<LockInfo[]> {
    if (locks.length === 0) return [];
    const processes = new Set(locks.map((lock) => lock.process));
    const [pings, server] = await Promise.all([this.pings.getPings([...processes], call), this.readServerInfo(this.db, call.signal)]);
    const now = server.serverTime.getTime();
    const infos: LockInfo[] = [];
    for (const lock of locks) {
      const lease = lock.lease ?? this.defaultLeaseMs;
      const lastPing = pings.get(lock.process) ?? null;
      const endsAt = lock.renew === false ? (lock.extended ?? lock.when).getTime() + lease : (lastPing?.getTime() ?? -Infinity) + lease;
      if (now < endsAt) infos.push(lockInfo(lock, lease, lastPing));
    }
    return infos;
  }
}

function lockInfo(lock: LockDocument, lease: number, lastPing: Date | null): LockInfo {
  const renew = lock.renew !== false;
  const owner = lock.who.startsWith(`${lock.process}:`) ? lock.who.slice(lock.process.length + 1) : lock.who;
  return {
    key: lock._id,
    owner,
    reason: lock.why === '' ? undefined : lock.why,
    acquiredAt: lock.when,
    // A renewed lock lives as long as its process pings; otherwise until its lease after the last extend.
    expiresAt: renew ? null : new Date((lock.extended ?? lock.when).getTime() + lease),
    token: BigInt(lock.fence ?? 0),
    details: {
      state: lock.state,
      process: lock.process,
      who: lock.who,
      why: lock.why,
      when: lock.when.toISOString(),
      ts: lock.ts.toHexString(),
      lease,
      renewedByPings: renew,
      lastPing: lastPing?.toISOString() ?? null,
    },
  };
}
