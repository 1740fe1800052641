import type { LockInfo } from '@holdfast/core';

/** A lock row as pg returns it: bigint as text, timestamptz as Date. */
export interface LockRow {
  key: string;
  owner: string;
  reason: string | null;
  token: string;
  acquired_at: Date;
  expires_at: Date;
  lock_id: string;
}

export function lockInfo(row: LockRow): LockInfo {
  return {
    key: row.key,
    owner: row.owner,
    reason: row.reason ?? undefined,
    token: BigInt(row.token),
    acquiredAt: row.acquired_at,
    expiresAt: row.expires_at,
  };
}

/** JavaScript's default string order (UTF-16 code units), which list() promises; SQL's "C" order is by code point. */
export function byKey(a: LockInfo, b: LockInfo): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
