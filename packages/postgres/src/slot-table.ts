import { LockConflictError, type LockInfo } from '@holdfast/core';
import type { ExtendItem, SlotRequest } from '@holdfast/core/backend';
import { extendArrays, extendedRows } from './lock-table.js';
import { type GrantAnswer, type GrantRow, grantAnswer, inUseAs, type LockRow, lockInfo } from './rows.js';
import type { SlotStatements } from './slot-statements.js';
import type { TableQuery } from './table-query.js';

/** The semaphore statements on one table (see slot-statements.ts), each one round trip on a borrowed connection. */
export class SlotTable {
  constructor(
    private readonly query: TableQuery,
    private readonly sql: SlotStatements,
  ) {}

  /** One of `request.limit` slots, or busy; LockConflictError when the key is in use otherwise. */
  async grant(request: SlotRequest, signal: AbortSignal): Promise<GrantAnswer> {
    const [row] = await this.query.run<GrantRow>(
      this.sql.grant,
      [request.key, request.lockId, request.owner, request.reason ?? null, request.ttlMs, request.limit],
      signal,
    );
    const answer = grantAnswer(row);
    if (answer.granted || answer.inUseLimit === null || answer.inUseLimit === request.limit) return answer;
    throw new LockConflictError(
      request.key,
      `it is in use as ${inUseAs(answer.inUseLimit)}, not as a semaphore with limit ${request.limit}`,
    );
  }

  /** The new expiry of each slot still held, keyed by `extendId`. */
  async extendMany(items: readonly ExtendItem[], signal: AbortSignal): Promise<Map<string, Date>> {
    return extendedRows(await this.query.run(this.sql.extendMany, extendArrays(items), signal));
  }

  /** Owner-checked; true when the slot was still held. Wakes the key's waiters everywhere. */
  async release(key: string, lockId: string, signal: AbortSignal): Promise<boolean> {
    return (await this.query.run(this.sql.release, [key, lockId], signal)).length > 0;
  }

  async isHeld(key: string, lockId: string, signal: AbortSignal): Promise<boolean> {
    return (await this.query.run(this.sql.isHeld, [key, lockId], signal)).length > 0;
  }

  async holders(key: string, signal: AbortSignal): Promise<LockInfo[]> {
    const rows = await this.query.run<LockRow & { slot_limit: number }>(this.sql.holders, [key], signal);
    return rows.map((row) => ({ ...lockInfo(row), details: { limit: row.slot_limit } }));
  }
}
