import { LockConflictError, type LockInfo } from '@holdfast/core';
import { type ExtendItem, extendId, type GrantRequest } from '@holdfast/core/backend';
import { byKey, type GrantAnswer, type GrantRow, grantAnswer, inUseAs, type LockRow, lockInfo } from './rows.js';
import { likePrefix, type Statements } from './statements.js';
import type { TableQuery } from './table-query.js';

/** The plain lock statements on one table, each one round trip on a borrowed connection. */
export class LockTable {
  constructor(
    private readonly query: TableQuery,
    private readonly sql: Statements,
  ) {}

  async grant(request: GrantRequest, signal: AbortSignal): Promise<GrantAnswer> {
    const [row] = await this.query.run<GrantRow>(
      this.sql.grant,
      [request.key, request.lockId, request.owner, request.reason ?? null, request.ttlMs],
      signal,
    );
    const answer = grantAnswer(row);
    if (!answer.granted && answer.inUseLimit) {
      throw new LockConflictError(request.key, `it is in use as ${inUseAs(answer.inUseLimit)}, not as a plain lock`);
    }
    return answer;
  }

  /** The new expiry of each item still held, keyed by `extendId`. */
  async extendMany(items: readonly ExtendItem[], signal: AbortSignal): Promise<Map<string, Date>> {
    return extendedRows(await this.query.run(this.sql.extendMany, extendArrays(items), signal));
  }

  /** Owner-checked delete; true when the grant was still held. Wakes the key's waiters everywhere. */
  async release(key: string, lockId: string, signal: AbortSignal): Promise<boolean> {
    const [row] = await this.query.run<{ live: boolean }>(this.sql.release, [key, lockId], signal);
    return row?.live === true;
  }

  async isHeld(key: string, lockId: string, signal: AbortSignal): Promise<boolean> {
    return (await this.query.run(this.sql.isHeld, [key, lockId], signal)).length > 0;
  }

  async inspect(key: string, signal: AbortSignal): Promise<LockInfo | null> {
    const [row] = await this.query.run<LockRow>(this.sql.inspect, [key], signal);
    return row ? lockInfo(row) : null;
  }

  async list(prefix: string, signal: AbortSignal): Promise<LockInfo[]> {
    return (await this.query.run<LockRow>(this.sql.list, [likePrefix(prefix)], signal)).map(lockInfo).sort(byKey);
  }

  /** Frees the key, a plain lock or every slot of a semaphore; true when something live was there. */
  async forceRelease(key: string, signal: AbortSignal): Promise<boolean> {
    const [row] = await this.query.run<{ live: boolean }>(this.sql.forceRelease, [key], signal);
    return row?.live === true;
  }
}

/** Identifies one grant within a batch of extensions. */
/** The three parallel arrays ($1 keys, $2 lock ids, $3 ttls) of a batch of extensions. */
export function extendArrays(items: readonly ExtendItem[]): unknown[] {
  return [items.map((i) => i.key), items.map((i) => i.lockId), items.map((i) => i.ttlMs)];
}

/** The rows a batch of extensions returns, as new expiries keyed by `extendId`. */
export function extendedRows(rows: readonly { key: string; lock_id: string; expires_at: Date }[]): Map<string, Date> {
  return new Map(rows.map((row) => [extendId(row.key, row.lock_id), row.expires_at]));
}
