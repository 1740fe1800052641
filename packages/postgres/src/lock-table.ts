import { BackendError, type LockInfo } from '@holdfast/core';
import type { GrantRequest } from '@holdfast/core/backend';
import { byKey, type LockRow, lockInfo } from './rows.js';
import type { SchemaGuard } from './schema-guard.js';
import type { SqlRunner } from './sql-runner.js';
import { likePrefix, type Statements } from './statements.js';
import type { TableNames } from './table-names.js';

export type GrantAnswer =
  | { granted: true; token: bigint; acquiredAt: Date; expiresAt: Date }
  /** remainingMs: the holder's lease left by the server's clock; null when the holder is unknown (a race). */
  | { granted: false; remainingMs: number | null };

export interface ExtendItem {
  readonly key: string;
  readonly lockId: string;
  readonly ttlMs: number;
}

const UNDEFINED_TABLE = '42P01';

/** The lock statements on one table, each one round trip on a borrowed connection. */
export class LockTable {
  constructor(
    private readonly runner: SqlRunner,
    private readonly sql: Statements,
    private readonly names: TableNames,
    private readonly schema: SchemaGuard,
  ) {}

  async grant(request: GrantRequest, signal: AbortSignal): Promise<GrantAnswer> {
    const [row] = await this.run<{ granted: boolean; token: string; acquired_at: Date; expires_at: Date; remaining_ms: number | null }>(
      this.sql.grant,
      [request.key, request.lockId, request.owner, request.reason ?? null, request.ttlMs],
      signal,
    );
    if (!row) return { granted: false, remainingMs: null };
    if (!row.granted) return { granted: false, remainingMs: row.remaining_ms };
    return { granted: true, token: BigInt(row.token), acquiredAt: row.acquired_at, expiresAt: row.expires_at };
  }

  /** The new expiry of each item still held, keyed by `extendId`. */
  async extendMany(items: readonly ExtendItem[], signal: AbortSignal): Promise<Map<string, Date>> {
    const rows = await this.run<{ key: string; lock_id: string; expires_at: Date }>(
      this.sql.extendMany,
      [items.map((i) => i.key), items.map((i) => i.lockId), items.map((i) => i.ttlMs)],
      signal,
    );
    return new Map(rows.map((row) => [extendId(row.key, row.lock_id), row.expires_at]));
  }

  /** Owner-checked delete; true when the grant was still held. Wakes the key's waiters everywhere. */
  async release(key: string, lockId: string, signal: AbortSignal): Promise<boolean> {
    const [row] = await this.run<{ live: boolean }>(this.sql.release, [key, lockId], signal);
    return row?.live === true;
  }

  async isHeld(key: string, lockId: string, signal: AbortSignal): Promise<boolean> {
    return (await this.run(this.sql.isHeld, [key, lockId], signal)).length > 0;
  }

  async inspect(key: string, signal: AbortSignal): Promise<LockInfo | null> {
    const [row] = await this.run<LockRow>(this.sql.inspect, [key], signal);
    return row ? lockInfo(row) : null;
  }

  async list(prefix: string, signal: AbortSignal): Promise<LockInfo[]> {
    return (await this.run<LockRow>(this.sql.list, [likePrefix(prefix)], signal)).map(lockInfo).sort(byKey);
  }

  async forceRelease(key: string, signal: AbortSignal): Promise<boolean> {
    const [row] = await this.run<{ live: boolean }>(this.sql.forceRelease, [key], signal);
    return row?.live === true;
  }

  private async run<Row extends object>(text: string, values: readonly unknown[], signal: AbortSignal): Promise<Row[]> {
    await this.schema.ensure(signal);
    try {
      return await this.runner.query<Row & Record<string, unknown>>(text, values, signal);
    } catch (error) {
      if ((error as { code?: unknown }).code === UNDEFINED_TABLE) {
        throw new BackendError(
          'postgres',
          `table ${this.names.name} or ${this.names.name}_fences does not exist: apply the DDL in docs/semantics-postgres.md or leave createTables on`,
          error,
        );
      }
      throw error;
    }
  }
}

/** Identifies one grant within a batch of extensions. */
export function extendId(key: string, lockId: string): string {
  return `${lockId}\u0000${key}`;
}
