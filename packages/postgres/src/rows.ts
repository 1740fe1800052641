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

/** A read-write grant as its holders' statements return it: a LockRow with its mode. */
export interface ModeHolderRow extends LockRow {
  mode: string;
}

export function modeHolderInfo(row: ModeHolderRow): LockInfo {
  return { ...lockInfo(row), details: { mode: row.mode } };
}

/** JavaScript's default string order (UTF-16 code units), which list() promises; SQL's "C" order is by code point. */
export function byKey(a: LockInfo, b: LockInfo): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** The one row a grant statement (lock or slot) answers with. */
export interface GrantRow {
  granted: boolean;
  token: string | null;
  acquired_at: Date | null;
  expires_at: Date | null;
  remaining_ms: number | null;
  /** How the key is in use when busy: 0 as a plain lock, N as a semaphore of limit N, -1 a read-write lock, null unknown. */
  in_use_limit: number | null;
}

export type GrantAnswer =
  | { granted: true; token: bigint; acquiredAt: Date; expiresAt: Date }
  /** remainingMs: the holder's lease left by the server's clock; null when the holder is unknown (a race). */
  | { granted: false; remainingMs: number | null; inUseLimit: number | null };

export function grantAnswer(row: GrantRow | undefined): GrantAnswer {
  if (!row) return { granted: false, remainingMs: null, inUseLimit: null };
  if (!row.granted) return { granted: false, remainingMs: row.remaining_ms, inUseLimit: row.in_use_limit };
  return { granted: true, token: BigInt(row.token!), acquiredAt: row.acquired_at!, expiresAt: row.expires_at! };
}

/** What `in_use_limit` says the key is in use as, for a LockConflictError's message. */
export function inUseAs(limit: number): string {
  if (limit === 0) return 'a plain lock';
  return limit < 0 ? 'a read-write lock' : `a semaphore with limit ${limit}`;
}
