import type { LockMode } from '@holdfast/core/backend';
import { SEMAPHORE_FLAG, SEMAPHORE_LOCK_KEY } from './constants.js';
import type { ConsulHttp } from './consul-http.js';
import { decodeValue, encodeValue, type KvEntry, lockIdOf, readEntries, type TxnKvOp, transact } from './kv.js';
import { destroySession } from './session.js';

/*
 * The Go client's semaphore (api/semaphore.go, `consul lock -n N <prefix>`): under `<prefix>/`, one
 * contender entry `<prefix>/<session>` per contender, held by its session (behaviour delete), and the
 * coordination key `<prefix>/.lock` = {"Limit": N, "Holders": {"<session>": true}}, changed only by
 * check-and-set. A holder whose session no longer holds any entry there is dead and pruned.
 */

/** Where Holdfast key "a/b" lives as a semaphore: the Go prefix "<prefix>/a/b". */
export interface SemaphorePlace {
  /** The user's key, for errors. */
  readonly key: string;
  /** `<prefix>/<key>/`: the coordination key and the contender entries; what its watch reads. */
  readonly dir: string;
  readonly coordinationKey: string;
  /** `<prefix>/<key>`: the same key as a plain lock, never held while slots are. */
  readonly lockKey: string;
  /** The KV flags of its entries: SEMAPHORE_FLAG, or READ_WRITE_FLAG for a read-write lock (read-write.ts). */
  readonly flag: string;
}

export function semaphorePlace(prefix: string, key: string, flag = SEMAPHORE_FLAG): SemaphorePlace {
  const lockKey = `${prefix}/${key}`;
  return { key, dir: `${lockKey}/`, coordinationKey: `${lockKey}/${SEMAPHORE_LOCK_KEY}`, lockKey, flag };
}

export function isSemaphoreDir(watchKey: string): boolean {
  // User keys never end with "/" (core's key rules), so a directory cannot be mistaken for a lock key.
  return watchKey.endsWith('/');
}

export function contenderKey(dir: string, session: string): string {
  return `${dir}${session}`;
}

/** The semaphore as one read of its directory shows it. */
export interface SemaphoreState {
  /** The coordination entry; undefined when there is none (nobody holds a slot). */
  readonly entry: KvEntry | undefined;
  /** Why the coordination key is not a semaphore's (other flags, no record): a conflict. */
  readonly problem: string | undefined;
  /** The record's limit; undefined without a record. */
  readonly limit: number | undefined;
  /** The record's holders whose session still holds an entry in the directory (Go's pruneDeadHolders). */
  readonly holders: readonly string[];
  /** Holders in the record, dead ones included: what a check-and-set must start from. */
  readonly recorded: readonly string[];
  /** The directory's entries by the session holding them: the contender entries. */
  readonly bySession: ReadonlyMap<string, KvEntry>;
  /** A read-write record's mode per holder session (empty for a semaphore's). */
  readonly modes: ReadonlyMap<string, LockMode>;
}

/** Go's record; a read-write lock's adds `Modes` (Go ignores fields it does not know). */
interface CoordinationRecord {
  readonly Limit: number;
  readonly Holders: Readonly<Record<string, boolean>>;
  readonly Modes?: Readonly<Record<string, LockMode>>;
}

export function semaphoreState(dir: string, entries: readonly KvEntry[], flag = SEMAPHORE_FLAG): SemaphoreState {
  const coordinationKey = `${dir}${SEMAPHORE_LOCK_KEY}`;
  const entry = entries.find((candidate) => candidate.Key === coordinationKey);
  const bySession = new Map<string, KvEntry>();
  for (const candidate of entries) if (candidate.Session && candidate.Key.startsWith(dir)) bySession.set(candidate.Session, candidate);
  const empty = { entry, limit: undefined, holders: [], recorded: [], bySession, modes: new Map<string, LockMode>() };
  if (!entry || entry.Value === null) return { ...empty, problem: entry && entry.Flags !== flag ? notSemaphore(entry, flag) : undefined };
  if (entry.Flags !== flag) return { ...empty, problem: notSemaphore(entry, flag) };
  const record = decodeRecord(decodeValue(entry));
  if (!record) return { ...empty, problem: `its coordination key ${entry.Key} holds no semaphore record` };
  const recorded = Object.keys(record.Holders).filter((session) => record.Holders[session]);
  const holders = recorded.filter((session) => bySession.has(session));
  const modes = new Map<string, LockMode>();
  for (const session of recorded) modes.set(session, record.Modes?.[session] === 'shared' ? 'shared' : 'exclusive');
  return { entry, problem: undefined, limit: record.Limit, holders, recorded, bySession, modes };
}

/** Slots free in this state; without a record (or with a foreign one, a conflict to be reported) as good as unlimited. */
export function roomIn(state: SemaphoreState): number {
  if (state.problem !== undefined || state.limit === undefined) return Number.POSITIVE_INFINITY;
  return Math.max(0, state.limit - state.holders.length);
}

/** The coordination value as Go's encodeLock writes it (JSON of {Limit, Holders}), base64 for a transaction. */
export function encodeRecord(limit: number, holders: Iterable<string>, modes?: ReadonlyMap<string, LockMode>): string {
  const sessions = [...holders];
  const record: CoordinationRecord = {
    Limit: limit,
    Holders: Object.fromEntries(sessions.map((session) => [session, true])),
    ...(modes && { Modes: Object.fromEntries(sessions.map((session) => [session, modes.get(session) ?? 'exclusive'])) }),
  };
  return encodeValue(JSON.stringify(record));
}

/** The state's record with only `holders` (each keeping its mode, for a read-write record), for a check-and-set. */
export function encodeStateRecord(place: SemaphorePlace, state: SemaphoreState, holders: readonly string[]): string {
  return encodeRecord(state.limit!, holders, place.flag === SEMAPHORE_FLAG ? undefined : state.modes);
}

function decodeRecord(text: string): CoordinationRecord | null {
  try {
    const parsed = JSON.parse(text) as Partial<CoordinationRecord> | null;
    if (!parsed || !Number.isInteger(parsed.Limit) || (parsed.Limit as number) < 1) return null;
    const holders = parsed.Holders ?? {};
    if (typeof holders !== 'object') return null;
    // A read-write record's modes must survive the decoding: without them every holder reads as a writer.
    const modes = parsed.Modes !== null && typeof parsed.Modes === 'object' ? { Modes: parsed.Modes } : {};
    return { Limit: parsed.Limit as number, Holders: holders, ...modes };
  } catch {
    return null;
  }
}

function notSemaphore(entry: KvEntry, flag: string): string {
  const use = flag === SEMAPHORE_FLAG ? 'semaphore' : 'read-write lock';
  return `existing key does not match ${use} use (${entry.Key} has flags ${entry.Flags}, ${use} flag ${flag})`;
}

/** Why this state no longer counts `session` among the semaphore's live holders, or undefined while it does. */
export function whyNotHolder(state: SemaphoreState, session: string): string | undefined {
  if (state.holders.includes(session)) return undefined;
  if (!state.entry) return 'the semaphore has no holders record any more (force-released or destroyed)';
  if (state.problem !== undefined) return `the semaphore's coordination key was taken over: ${state.problem}`;
  if (state.recorded.includes(session)) return 'its session no longer holds its contender entry (session invalidated or destroyed)';
  return "it is no longer among the semaphore's holders (force-released, or pruned as dead)";
}

/**
 * Go's Semaphore.Release: `session` leaves the holders by check-and-set (read again while others
 * change the record, as Go does; bounded by `signal`) and its contender entry is deleted, in one
 * transaction. The last live holder to leave deletes the record (Go's Destroy), so that an unused
 * semaphore leaves nothing behind and its limit may change. False if `session` was no longer a holder.
 */
export async function leaveSemaphore(http: ConsulHttp, place: SemaphorePlace, session: string, signal: AbortSignal): Promise<boolean> {
  const dropContender: TxnKvOp = { Verb: 'delete', Key: contenderKey(place.dir, session) };
  for (;;) {
    const state = await readSemaphore(http, place, signal);
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
    const state = await readSemaphore(http, place, signal);
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
  const state = await readSemaphore(http, place, signal);
  for (const [session, entry] of state.bySession) {
    if (lockIdOf(entry) !== lockId) continue;
    await leaveSemaphore(http, place, session, signal);
    await destroySession(http, session, signal);
  }
}

/** One read of the semaphore's directory (linearizable unless `consistent` is false), and its X-Consul-Index. */
export async function readSemaphore(
  http: ConsulHttp,
  place: SemaphorePlace,
  signal: AbortSignal,
  consistent = true,
): Promise<SemaphoreState & { readonly index: bigint }> {
  const { entries, index } = await readEntries(http, place.dir, { recurse: true, consistent, signal });
  return { ...semaphoreState(place.dir, entries, place.flag), index };
}

/** The record with only `holders` left, by check-and-set; deleted when none is left. */
function recordWithout(place: SemaphorePlace, state: SemaphoreState, holders: readonly string[]): TxnKvOp {
  const Index = state.entry!.ModifyIndex;
  if (holders.length === 0) return { Verb: 'delete-cas', Key: place.coordinationKey, Index };
  return { Verb: 'cas', Key: place.coordinationKey, Index, Flags: place.flag, Value: encodeStateRecord(place, state, holders) };
}
