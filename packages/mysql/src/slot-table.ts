import { LockConflictError, type LockInfo } from '@holdfast/core';
import type { SlotRequest } from '@holdfast/core/backend';
import type { ResultSetHeader } from 'mysql2';
import type { KeyState } from './key-state.js';
import { type GrantAnswer, inUseAs, look, reserve, utf8 } from './lock-table.js';
import { text } from './rows.js';
import type { SlotStatements } from './slot-statements.js';
import type { Row } from './sql-runner.js';
import type { Statements } from './statements.js';
import type { TableSession } from './table-session.js';

/** Takes a grant makes at most when it keeps losing a free slot to grants reserved after its own. */
const MAX_TAKES = 3;

/** What a look says of a slot attempt: granted (its slot), busy, or a free slot to take. */
function judge(state: KeyState | null, request: SlotRequest): GrantAnswer | 'free slot' {
  if (state === null) return 'free slot';
  if (state.kind !== 'semaphore' || state.limit !== request.limit) {
    throw new LockConflictError(request.key, `it is in use as ${inUseAs(state)}, not as a semaphore with limit ${request.limit}`);
  }
  const mine = state.slots.find((slot) => slot.lockId === request.lockId);
  if (mine) return { granted: true, lock: mine.info };
  return state.slots.length < state.limit ? 'free slot' : { granted: false, holder: state.holder };
}

/**
 * The semaphore statements on one table (see slot-statements.ts). A slot grant is the lock's
 * protocol, each statement autocommitted: look (busy or a conflict writes nothing), reserve a token
 * from the key's fence counter, take a slot only with the newest reservation and while the row has
 * room, look again. A take that lost to a grant reserved after it finds the slot taken or still
 * free: it tries again, a few times, with a new reservation.
 */
export class SlotTable {
  constructor(
    private readonly db: TableSession,
    private readonly sql: Statements,
    private readonly slots: SlotStatements,
  ) {}

  /** One of `request.limit` slots, or busy; LockConflictError when the key is in use otherwise. */
  grant(request: SlotRequest, signal: AbortSignal): Promise<GrantAnswer> {
    const key = utf8(request.key);
    const [owner, reason] = [utf8(request.owner), request.reason === undefined ? null : utf8(request.reason)];
    return this.db.run(signal, async (run) => {
      let state = await look(run, this.sql, key);
      for (let takes = 0; ; takes++) {
        const verdict = judge(state, request);
        if (verdict !== 'free slot') return verdict;
        // Still room after every take lost: busy, and the wait that follows is short (KeyWatch).
        if (takes === MAX_TAKES) return { granted: false, holder: state?.holder ?? null };
        const reserved = await reserve(run, this.sql, key);
        await run(this.slots.take, [utf8(request.lockId), owner, reason, request.ttlMs, request.limit, key, reserved]);
        state = await look(run, this.sql, key);
      }
    });
  }

  /** True when the slot was live and now runs for `ttlMs` from the server's now. */
  extend(key: string, lockId: string, ttlMs: number, signal: AbortSignal): Promise<boolean> {
    return this.db.run(signal, async (run) => {
      const id = utf8(lockId);
      const { affectedRows } = await run<ResultSetHeader>(this.slots.extend, [id, ttlMs, id, ttlMs, utf8(key), id]);
      // 0 is also what a pool without the FOUND_ROWS flag reports for a row set to what it had.
      return affectedRows > 0 || held(await look(run, this.sql, utf8(key)), lockId);
    });
  }

  /** Owner-checked by the slot's lock id; true when the slot was there. */
  release(key: string, lockId: string, signal: AbortSignal): Promise<boolean> {
    const id = utf8(lockId);
    return this.db.run(signal, async (run) => (await run<ResultSetHeader>(this.slots.release, [id, id, utf8(key), id])).affectedRows > 0);
  }

  isHeld(key: string, lockId: string, signal: AbortSignal): Promise<boolean> {
    return this.db.run(signal, async (run) => held(await look(run, this.sql, utf8(key)), lockId));
  }

  /** The live slots, oldest grant first, each with `details.limit`. */
  holders(key: string, signal: AbortSignal): Promise<LockInfo[]> {
    return this.db.run(signal, async (run) => {
      const state = await look(run, this.sql, utf8(key));
      return state?.kind === 'semaphore' ? state.slots.map((slot) => slot.info) : [];
    });
  }

  /** Per key, the lock ids of its live slots (keys with none are left out). */
  liveSlots(keys: readonly string[], signal: AbortSignal): Promise<Map<string, Set<string>>> {
    return this.db.run(signal, async (run) => {
      const live = new Map<string, Set<string>>();
      for (const row of await run<Row[]>(this.slots.liveSlots, [keys.map(utf8)])) {
        const key = text(row['key']);
        live.set(key, (live.get(key) ?? new Set()).add(text(row['lock_id'])));
      }
      return live;
    });
  }
}

/** Whether the key's row holds this lock id: a semaphore's slot, or a read-write grant (kept by the same statements). */
const held = (state: KeyState | null, lockId: string): boolean =>
  (state?.kind === 'semaphore' || state?.kind === 'readWrite') && state.slots.some((slot) => slot.lockId === lockId);
