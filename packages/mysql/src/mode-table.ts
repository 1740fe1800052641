import { LockConflictError, type LockInfo } from '@holdfast/core';
import type { ModeRequest } from '@holdfast/core/backend';
import type { KeyState } from './key-state.js';
import { type GrantAnswer, inUseAs, look, reserve, utf8 } from './lock-table.js';
import type { Statements } from './statements.js';
import type { TableSession } from './table-session.js';

/** Takes a grant makes at most when it keeps losing a fitting moment to grants reserved after its own. */
const MAX_TAKES = 3;

/** What a look says of a read-write attempt: granted (its grant), busy, or room to take. */
function judge(state: KeyState | null, request: ModeRequest): GrantAnswer | 'room' {
  if (state === null) return 'room';
  if (state.kind !== 'readWrite') throw new LockConflictError(request.key, `it is in use as ${inUseAs(state)}, not as a read-write lock`);
  const mine = state.slots.find((slot) => slot.lockId === request.lockId);
  if (mine) return { granted: true, lock: mine.info };
  const inTheWay =
    request.mode === 'exclusive' ? state.slots.length > 0 : state.slots.some((slot) => slot.info.details?.['mode'] === 'exclusive');
  return inTheWay ? { granted: false, holder: state.holder } : 'room';
}

/**
 * The read-write lock statements on one table (see mode-statements.ts). A grant is the semaphore's
 * protocol (slot-table.ts), each statement autocommitted: look (busy or a conflict writes nothing),
 * reserve a token from the key's fence counter, take only with the newest reservation and while the
 * newest row fits the mode, look again. Grants are then extended and freed by the slot statements.
 */
export class ModeTable {
  constructor(
    private readonly db: TableSession,
    private readonly sql: Statements,
    private readonly take: string,
  ) {}

  /** A shared or exclusive grant, or busy; LockConflictError when the key is a plain lock or a semaphore. */
  grant(request: ModeRequest, signal: AbortSignal): Promise<GrantAnswer> {
    const key = utf8(request.key);
    const [owner, reason] = [utf8(request.owner), request.reason === undefined ? null : utf8(request.reason)];
    return this.db.run(signal, async (run) => {
      let state = await look(run, this.sql, key);
      for (let takes = 0; ; takes++) {
        const verdict = judge(state, request);
        if (verdict !== 'room') return verdict;
        // It fitted every time, yet every take lost: busy, and the wait that follows is short (KeyWatch).
        if (takes === MAX_TAKES) return { granted: false, holder: state ? { ...state.holder, full: false } : null };
        const reserved = await reserve(run, this.sql, key);
        await run(this.take, [utf8(request.lockId), owner, reason, request.ttlMs, request.mode, key, reserved]);
        state = await look(run, this.sql, key);
      }
    });
  }

  /** The live grants, oldest first, each with `details.mode`. */
  holders(key: string, signal: AbortSignal): Promise<LockInfo[]> {
    return this.db.run(signal, async (run) => {
      const state = await look(run, this.sql, utf8(key));
      return state?.kind === 'readWrite' ? state.slots.map((slot) => slot.info) : [];
    });
  }
}
