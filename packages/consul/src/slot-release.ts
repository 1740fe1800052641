import { SEMAPHORE_FLAG } from './constants.js';
import type { ConsulHttp } from './consul-http.js';
import { readEntries, type TxnKvOp, transact } from './kv.js';
import { lockIdOf } from './ownership.js';
import { contenderKey, encodeRecord, type SemaphorePlace, type SemaphoreState, semaphoreState } from './semaphore-record.js';
import { destroySession } from './session.js';

/**
 * Go's Semaphore.Release: `session` leaves the holders by check-and-set (read again while others
 * change the record, as Go does; bounded by `signal`) and its contender entry is deleted, in one
 * transaction. The last live holder to leave deletes the record (Go's Destroy), so that an unused
 * semaphore leaves nothing behind and its limit may change. False if `session` was no longer a holder.
 */
export async function leaveSemaphore(http: ConsulHttp, place: SemaphorePlace, session: string, signal: AbortSignal): Promise<boolean> {
  const dropContender: TxnKvOp = { Verb: 'delete', Key: contenderKey(place.dir, session) };
  for (;;) {
    const state = await readState(http, place, signal);
    if (!state.entry || state.problem !== undefined || !state.recorded.includes(session)) {
      await transact(http, [dropContender], signal);
      return false;
    }
    const rest = state.holders.filter((holder) => holder !== session);
    const result = await transact(http, [recordWithout(place, state, rest), dropContender], signal);
    if (result.ok) return true;
  }
}

/**
 * An operator's release of every slot: the record goes (check-and-set against the record read), so
 * every holder, Holdfast's or Go's, finds itself no longer among the holders at its monitor's next
 * read. Contender entries stay with their sessions: a waiting Go contender still needs its own.
 */
export async function forceReleaseSlots(http: ConsulHttp, place: SemaphorePlace, signal: AbortSignal): Promise<boolean> {
  for (;;) {
    const state = await readState(http, place, signal);
    if (!state.entry || state.problem !== undefined) return false;
    const result = await transact(http, [recordWithout(place, state, [])], signal);
    if (result.ok) return state.holders.length > 0;
  }
}

/**
 * abandon() of a slot attempt whose answer never came: if its contender entry (found by the
 * attempt's lockId) landed, that session leaves the holders and is destroyed.
 */
export async function abandonSlot(http: ConsulHttp, place: SemaphorePlace, lockId: string, signal: AbortSignal): Promise<void> {
  const state = await readState(http, place, signal);
  for (const [session, entry] of state.bySession) {
    if (lockIdOf(entry) !== lockId) continue;
    await leaveSemaphore(http, place, session, signal);
    await destroySession(http, session, signal);
  }
}

async function readState(http: ConsulHttp, place: SemaphorePlace, signal: AbortSignal): Promise<SemaphoreState> {
  const { entries } = await readEntries(http, place.dir, { recurse: true, consistent: true, signal });
  return semaphoreState(place.dir, entries);
}

/** The record with only `holders` left, by check-and-set; deleted when none is left. */
function recordWithout(place: SemaphorePlace, state: SemaphoreState, holders: readonly string[]): TxnKvOp {
  const Index = state.entry!.ModifyIndex;
  if (holders.length === 0) return { Verb: 'delete-cas', Key: place.coordinationKey, Index };
  return { Verb: 'cas', Key: place.coordinationKey, Index, Flags: SEMAPHORE_FLAG, Value: encodeRecord(state.limit!, holders) };
}
