import { LockConflictError, type LockInfo } from '@holdfast/core';
import type { ExtendItem, GrantRequest } from '@holdfast/core/backend';
import type { ResultSetHeader } from 'mysql2';
import { extendMany } from './extend-many.js';
import { type KeyState, keyState } from './key-state.js';
import type { Holder } from './key-watch.js';
import { byKey, lockInfo } from './rows.js';
import type { Row, Run } from './sql-runner.js';
import { prefixRange, type Statements } from './statements.js';
import type { TableNames } from './table-names.js';
import type { TableSession } from './table-session.js';

export type GrantAnswer =
  | { readonly granted: true; readonly lock: LockInfo }
  /** holder: who holds the key now; null when it looked free by the time it was read (a race). */
  | { readonly granted: false; readonly holder: Holder | null };

export const utf8 = (value: string): Buffer => Buffer.from(value, 'utf8');

/** The key's live row, read on the operation's connection. */
export async function look(run: Run, sql: Statements, key: Buffer): Promise<KeyState | null> {
  return keyState((await run<Row[]>(sql.live, [key]))[0]);
}

/** A new value of the key's fence counter. */
export async function reserve(run: Run, sql: Statements, key: Buffer): Promise<string> {
  return String((await run<ResultSetHeader>(sql.reserve, [key])).insertId);
}

/** Granted when the key's live row is this attempt's lock, busy with whoever holds it, a conflict for a semaphore. */
function answer(state: KeyState | null, request: GrantRequest): GrantAnswer {
  if (state !== null && state.kind !== 'lock')
    throw new LockConflictError(request.key, `it is in use as ${inUseAs(state)}, not as a plain lock`);
  return state?.lockId === request.lockId ? { granted: true, lock: state.lock } : { granted: false, holder: state?.holder ?? null };
}

/** How a key is in use, for a LockConflictError's message. */
export function inUseAs(state: KeyState): string {
  if (state.kind === 'lock') return 'a plain lock';
  return state.kind === 'semaphore' ? `a semaphore with limit ${state.limit}` : 'a read-write lock';
}

const lockIdOf = (state: KeyState | null): string | undefined => (state?.kind === 'lock' ? state.lockId : undefined);

/**
 * The plain lock statements on one table (see statements.ts). Keys travel as their UTF-8 bytes, owner
 * and reason as bytes the server converts to utf8mb4: the pool's connection charset changes nothing.
 */
export class LockTable {
  constructor(
    private readonly db: TableSession,
    private readonly sql: Statements,
    private readonly names: TableNames,
  ) {}

  grant(request: GrantRequest, signal: AbortSignal): Promise<GrantAnswer> {
    const key = utf8(request.key);
    const ttlUs = request.ttlMs * 1000;
    const [owner, reason] = [utf8(request.owner), request.reason === undefined ? null : utf8(request.reason)];
    return this.db.run(signal, async (run) => {
      // Held already: by someone else (busy), or by this very attempt, retried after its answer was lost.
      const before = await look(run, this.sql, key);
      if (before) return answer(before, request);
      const reserved = await reserve(run, this.sql, key);
      await run(this.sql.take, [request.lockId, owner, reason, ttlUs, key, reserved, request.lockId, owner, reason, reserved, ttlUs]);
      return answer(await look(run, this.sql, key), request);
    });
  }

  /** True when the grant was live and now runs for `ttlMs` from the server's now. */
  extend(key: string, lockId: string, ttlMs: number, signal: AbortSignal): Promise<boolean> {
    return this.db.run(signal, async (run) => {
      const { affectedRows } = await run<ResultSetHeader>(this.sql.extend, [ttlMs * 1000, utf8(key), lockId]);
      // 0 is also what a pool without the FOUND_ROWS flag reports for a row set to the expiry it had.
      return affectedRows > 0 || lockIdOf(await look(run, this.sql, utf8(key))) === lockId;
    });
  }

  /** Extends many locks in a few statements: the new expiry of each still held, by `extendId` (see extend-many.ts). */
  extendMany(items: readonly ExtendItem[], signal: AbortSignal): Promise<Map<string, Date>> {
    return this.db.run(signal, (run) => extendMany(run, this.names, items));
  }

  release(key: string, lockId: string, signal: AbortSignal): Promise<boolean> {
    return this.db.run(signal, async (run) => (await run<ResultSetHeader>(this.sql.release, [utf8(key), lockId])).affectedRows > 0);
  }

  isHeld(key: string, lockId: string, signal: AbortSignal): Promise<boolean> {
    return this.db.run(signal, async (run) => lockIdOf(await look(run, this.sql, utf8(key))) === lockId);
  }

  /** The plain lock on the key (a semaphore's holders come from SlotTable.holders). */
  inspect(key: string, signal: AbortSignal): Promise<LockInfo | null> {
    return this.db.run(signal, async (run) => {
      const state = await look(run, this.sql, utf8(key));
      return state?.kind === 'lock' ? state.lock : null;
    });
  }

  /** Who holds the key now (a lock or a semaphore's slots), or null when it is free. */
  holder(key: string, signal: AbortSignal): Promise<Holder | null> {
    return this.db.run(signal, async (run) => (await look(run, this.sql, utf8(key)))?.holder ?? null);
  }

  list(prefix: string, signal: AbortSignal): Promise<LockInfo[]> {
    return this.db.run(signal, async (run) => (await run<Row[]>(this.sql.list, prefixRange(prefix))).map(lockInfo).sort(byKey));
  }

  /** Frees the key: a plain lock, or every slot of a semaphore. */
  forceRelease(key: string, signal: AbortSignal): Promise<boolean> {
    return this.db.run(signal, async (run) => (await run<ResultSetHeader>(this.sql.forceRelease, [utf8(key)])).affectedRows > 0);
  }
}
