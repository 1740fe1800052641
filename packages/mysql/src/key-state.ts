import { BackendError, type LockInfo } from '@holdfast/core';
import type { Holder } from './key-watch.js';
import { READ_WRITE_LIMIT } from './mode-statements.js';
import { lockInfo, text } from './rows.js';
import type { Row } from './sql-runner.js';

/** One holder of a semaphore's slot or a read-write lock's grant, as the slots array stores it (see slot-statements.ts). */
interface StoredSlot {
  readonly lock_id: string;
  readonly owner: string;
  readonly reason: string | null;
  readonly token: string;
  readonly acquired_ms: number;
  readonly expires_ms: number;
  /** A read-write grant's: 'shared' or 'exclusive'. */
  readonly mode?: string;
}

export interface SlotHolder {
  readonly lockId: string;
  readonly info: LockInfo;
}

/**
 * A key's live row as one look saw it: a plain lock, a semaphore with its live slots, or a read-write
 * lock with its live grants (each a SlotHolder, `details.mode` saying how), oldest grant first.
 */
export type KeyState =
  | { readonly kind: 'lock'; readonly lockId: string; readonly lock: LockInfo; readonly holder: Holder }
  | { readonly kind: 'semaphore'; readonly limit: number; readonly slots: readonly SlotHolder[]; readonly holder: Holder }
  | { readonly kind: 'readWrite'; readonly slots: readonly SlotHolder[]; readonly holder: Holder };

/** The state of the key from its LIVE row (statements.ts), or null when it is free. */
export function keyState(row: Row | undefined): KeyState | null {
  if (!row) return null;
  const token = BigInt(text(row['token']));
  if (row['slot_limit'] === null) {
    return {
      kind: 'lock',
      lockId: text(row['lock_id']),
      lock: lockInfo(row),
      holder: { token, remainingMs: Number(row['remaining_ms']), full: true },
    };
  }
  const limit = Number(row['slot_limit']);
  const nowMs = Number(row['now_ms']);
  const key = text(row['key']);
  // Expired slots count as free, judged against the server's now of the same statement.
  const slots = storedSlots(row['slots'])
    .filter((slot) => slot.expires_ms > nowMs)
    .map((slot) => slotHolder(key, limit === READ_WRITE_LIMIT ? { mode: slot.mode } : { limit }, slot))
    .sort((a, b) => (a.info.token < b.info.token ? -1 : 1));
  const firstEnd = Math.min(...slots.map((slot) => slot.info.expiresAt!.getTime()));
  // A busy read-write attempt waits for a change of the row (a release, a grant): no free slot to retry at once.
  if (limit === READ_WRITE_LIMIT) return { kind: 'readWrite', slots, holder: { token, remainingMs: firstEnd - nowMs, full: true } };
  return { kind: 'semaphore', limit, slots, holder: { token, remainingMs: firstEnd - nowMs, full: slots.length >= limit } };
}

function storedSlots(value: unknown): StoredSlot[] {
  try {
    const slots: unknown = JSON.parse(text(value));
    if (Array.isArray(slots)) return slots.filter((slot): slot is StoredSlot => typeof slot?.lock_id === 'string');
  } catch {
    // Reported below.
  }
  throw new BackendError('mysql', `a semaphore row's slots are not a JSON array of slots: ${text(value).slice(0, 80)}`);
}

function slotHolder(key: string, details: Record<string, unknown>, slot: StoredSlot): SlotHolder {
  return {
    lockId: slot.lock_id,
    info: {
      key,
      owner: slot.owner,
      reason: slot.reason ?? undefined,
      token: BigInt(slot.token),
      acquiredAt: new Date(slot.acquired_ms),
      expiresAt: new Date(slot.expires_ms),
      details,
    },
  };
}
