import { BackendError, type LockInfo } from '@holdfast/core';
import type { GrantRequest } from '@holdfast/core/backend';
import type { ResultSetHeader } from 'mysql2';
import type { Holder } from './key-watch.js';
import { byKey, lockInfo, text } from './rows.js';
import type { SchemaGuard } from './schema-guard.js';
import type { Row, Run, SqlRunner } from './sql-runner.js';
import { prefixRange, type Statements } from './statements.js';
import type { TableNames } from './table-names.js';

export type GrantAnswer =
  | { readonly granted: true; readonly lock: LockInfo }
  /** holder: who holds the key now; null when it looked free by the time it was read (a race). */
  | { readonly granted: false; readonly holder: Holder | null };

const NO_SUCH_TABLE = 1146;
const utf8 = (value: string): Buffer => Buffer.from(value, 'utf8');
const lockIdOf = (row: Row | undefined): string | undefined => (row ? text(row['lock_id']) : undefined);
/** Granted when the key's live row is this attempt's, else busy with whoever holds it. */
const answer = (row: Row | undefined, lockId: string): GrantAnswer =>
  row && lockIdOf(row) === lockId ? { granted: true, lock: lockInfo(row) } : { granted: false, holder: holderOf(row) };
const holderOf = (row: Row | undefined): Holder | null =>
  row ? { token: BigInt(text(row['token'])), remainingMs: Number(row['remaining_ms']) } : null;

/**
 * The lock statements on one table (see statements.ts). Keys travel as their UTF-8 bytes, owner and
 * reason as bytes the server converts to utf8mb4: the pool's connection charset changes nothing.
 */
export class LockTable {
  constructor(
    private readonly runner: SqlRunner,
    private readonly sql: Statements,
    private readonly names: TableNames,
    private readonly schema: SchemaGuard,
  ) {}

  grant(request: GrantRequest, signal: AbortSignal): Promise<GrantAnswer> {
    const key = utf8(request.key);
    const ttlUs = request.ttlMs * 1000;
    const [owner, reason] = [utf8(request.owner), request.reason === undefined ? null : utf8(request.reason)];
    return this.session(signal, async (run) => {
      // Held already: by someone else (busy), or by this very attempt, retried after its answer was lost.
      const before = await this.live(run, key);
      if (before) return answer(before, request.lockId);
      const reserved = (await run<ResultSetHeader>(this.sql.reserve, [key])).insertId;
      await run(this.sql.take, [request.lockId, owner, reason, ttlUs, key, reserved, request.lockId, owner, reason, reserved, ttlUs]);
      return answer(await this.live(run, key), request.lockId);
    });
  }

  /** True when the grant was live and now runs for `ttlMs` from the server's now. */
  extend(key: string, lockId: string, ttlMs: number, signal: AbortSignal): Promise<boolean> {
    return this.session(signal, async (run) => {
      const { affectedRows } = await run<ResultSetHeader>(this.sql.extend, [ttlMs * 1000, utf8(key), lockId]);
      // 0 is also what a pool without the FOUND_ROWS flag reports for a row set to the expiry it had.
      return affectedRows > 0 || lockIdOf(await this.live(run, utf8(key))) === lockId;
    });
  }

  release(key: string, lockId: string, signal: AbortSignal): Promise<boolean> {
    return this.session(signal, async (run) => (await run<ResultSetHeader>(this.sql.release, [utf8(key), lockId])).affectedRows > 0);
  }

  isHeld(key: string, lockId: string, signal: AbortSignal): Promise<boolean> {
    return this.session(signal, async (run) => lockIdOf(await this.live(run, utf8(key))) === lockId);
  }

  inspect(key: string, signal: AbortSignal): Promise<LockInfo | null> {
    return this.session(signal, async (run) => {
      const row = await this.live(run, utf8(key));
      return row ? lockInfo(row) : null;
    });
  }

  /** Who holds the key now, or null when it is free. */
  holder(key: string, signal: AbortSignal): Promise<Holder | null> {
    return this.session(signal, async (run) => holderOf(await this.live(run, utf8(key))));
  }

  list(prefix: string, signal: AbortSignal): Promise<LockInfo[]> {
    return this.session(signal, async (run) => (await run<Row[]>(this.sql.list, prefixRange(prefix))).map(lockInfo).sort(byKey));
  }

  forceRelease(key: string, signal: AbortSignal): Promise<boolean> {
    return this.session(signal, async (run) => (await run<ResultSetHeader>(this.sql.forceRelease, [utf8(key)])).affectedRows > 0);
  }

  private async live(run: Run, key: Buffer): Promise<Row | undefined> {
    return (await run<Row[]>(this.sql.live, [key]))[0];
  }

  private async session<T>(signal: AbortSignal, work: (run: Run) => Promise<T>): Promise<T> {
    await this.schema.ensure(signal);
    try {
      return await this.runner.withConnection(signal, work);
    } catch (error) {
      if ((error as { errno?: unknown }).errno === NO_SUCH_TABLE) {
        throw new BackendError(
          'mysql',
          `table ${this.names.name} or ${this.names.name}_fences does not exist: apply the DDL in docs/semantics-mysql.md or leave createTables on`,
          error,
        );
      }
      throw error;
    }
  }
}
