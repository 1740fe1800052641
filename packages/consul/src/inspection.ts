import { LockConflictError, type LockInfo } from '@holdfast/core';
import { LOCK_FLAG, READ_WRITE_FLAG } from './constants.js';
import type { ConsulHttp } from './consul-http.js';
import {
  decodeLockValue,
  decodeValue,
  isLockEntry,
  type KvEntry,
  lockConflict,
  lockDelayRefusal,
  lockIdOf,
  readEntries,
  readKey,
  transact,
} from './kv.js';
import { readSemaphore, type SemaphorePlace, type SemaphoreState, semaphorePlace } from './semaphore-record.js';
import { type SessionInfo, sessionInfo } from './session.js';

/** Where the provider's locks live: user key "a/b" is Consul key "<prefix>/a/b". */
export interface LockSpace {
  readonly http: ConsulHttp;
  readonly prefix: string;
}

/**
 * What inspect() reports about a key: its holder, or, for a key no session holds, whether a
 * lock-delay still keeps it from new holders. `probeSession` gives a session for that probe.
 */
export async function inspectKey(
  space: LockSpace,
  key: string,
  probeSession: () => Promise<string>,
  signal: AbortSignal,
): Promise<LockInfo | null> {
  const consulKey = `${space.prefix}/${key}`;
  const { entry } = await readKey(space.http, consulKey, true, signal);
  if (!entry) return null;
  if (!isLockEntry(entry)) throw lockConflict(key, entry);
  if (!entry.Session) {
    const delayed = await lockDelayInForce(space.http, consulKey, await probeSession(), signal);
    return delayed ? lockInfoOf(key, entry, { session: null, lockDelay: true }) : null;
  }
  const session = await sessionInfo(space.http, entry.Session, signal);
  return lockInfoOf(
    key,
    entry,
    {
      sessionName: session?.Name ?? null,
      node: session?.Node ?? null,
      sessionTtl: session?.TTL ?? null,
      lockDelayMs: session ? Math.round(session.LockDelay / 1e6) : null,
      lockDelay: false,
    },
    session,
  );
}

/**
 * Every lock held under `<prefix>/<keyPrefix>`, from one recursive read (keys, values and sessions):
 * only lock entries a live session holds (Consul clears the session of a released or invalidated
 * lock), sorted by the user's key.
 */
export async function listLocks(space: LockSpace, keyPrefix: string, signal: AbortSignal): Promise<LockInfo[]> {
  const { entries } = await readEntries(space.http, `${space.prefix}/${keyPrefix}`, { recurse: true, consistent: true, signal });
  const held: LockInfo[] = [];
  for (const entry of entries) {
    if (!entry.Session || !isLockEntry(entry)) continue;
    held.push(lockInfoOf(entry.Key.slice(space.prefix.length + 1), entry, {}));
  }
  return held.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * A semaphore's live holders, oldest grant first, from one read of its directory: each holder's
 * contender entry names it (a Holdfast value), or its session does (a `consul lock -n` peer).
 */
export function slotHolders(space: LockSpace, key: string, signal: AbortSignal): Promise<LockInfo[]> {
  const place = semaphorePlace(space.prefix, key);
  return holdersOf(space, place, signal, (state) => ({ limit: state.limit }));
}

/** A read-write lock's holders, each with `details.mode`. */
export function modeHolders(space: LockSpace, key: string, signal: AbortSignal): Promise<LockInfo[]> {
  const place = semaphorePlace(space.prefix, key, READ_WRITE_FLAG);
  return holdersOf(space, place, signal, (state, session) => ({ mode: state.modes.get(session) }));
}

/** The live holders of a coordination record, oldest grant first. */
async function holdersOf(
  space: LockSpace,
  place: SemaphorePlace,
  signal: AbortSignal,
  detailsOf: (state: SemaphoreState, session: string) => Record<string, unknown>,
): Promise<LockInfo[]> {
  const { key } = place;
  const state = await readSemaphore(space.http, place, signal);
  if (state.problem !== undefined) throw new LockConflictError(key, state.problem);
  const holders = await Promise.all(
    state.holders.map(async (session) => {
      const entry = state.bySession.get(session)!;
      const foreign = lockIdOf(entry) === undefined ? await sessionInfo(space.http, session, signal) : undefined;
      return lockInfoOf(key, entry, { ...detailsOf(state, session), coordinationKey: place.coordinationKey }, foreign);
    }),
  );
  return holders.sort((a, b) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0));
}

/**
 * Consul does not publish lock-delays. Probe without side effects: a transaction that would lock
 * the key and then fails a check on purpose is rolled back, and Consul reports a lock-delay first.
 */
async function lockDelayInForce(http: ConsulHttp, consulKey: string, session: string, signal: AbortSignal): Promise<boolean> {
  const result = await transact(
    http,
    [
      { Verb: 'lock', Key: consulKey, Session: session, Flags: LOCK_FLAG },
      { Verb: 'check-index', Key: consulKey, Index: 0 },
    ],
    signal,
  );
  return lockDelayRefusal(result);
}

/**
 * A lock entry (or a slot's contender entry) as LockInfo: a Holdfast value names its holder; a foreign
 * holder (`consul lock`) is shown raw. The token is the entry's ModifyIndex, unless a slot moved to a
 * new session recorded its token in the value.
 */
function lockInfoOf(key: string, entry: KvEntry, details: Record<string, unknown>, session?: SessionInfo | null): LockInfo {
  const raw = decodeValue(entry);
  const value = decodeLockValue(raw);
  const holder = session
    ? `${session.Name}@${session.Node}`
    : entry.Session
      ? `session ${entry.Session}`
      : '(lock-delay after an invalidated session)';
  return {
    key,
    owner: value?.owner ?? holder,
    reason: value?.reason,
    // A foreign holder records no time: report "now" and say so in details.
    acquiredAt: value ? new Date(value.acquiredAt) : new Date(),
    expiresAt: null,
    token: BigInt(value?.token ?? entry.ModifyIndex),
    details: {
      consulKey: entry.Key,
      session: entry.Session ?? null,
      lockIndex: entry.LockIndex,
      modifyIndex: entry.ModifyIndex,
      holdfast: value !== null,
      ...details,
      ...(value ? { lockId: value.lockId } : { value: raw, acquiredAtKnown: false }),
    },
  };
}
