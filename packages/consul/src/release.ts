import type { ConsulHttp } from './consul-http.js';
import { isLockEntry, type KvEntry, lockConflict, lockIdOf, readKey, transact } from './kv.js';

/** Compare-and-set rounds before a key that keeps changing is left to its session's fate. */
const MAX_CAS_ROUNDS = 3;

/** What identifies one grant on the server: the key, the session that took it, the ModifyIndex it got, and its lockId. */
export interface GrantProof {
  readonly consulKey: string;
  readonly sessionId: string;
  /** The key's ModifyIndex as we left it; undefined when unknown (an attempt whose answer never came). */
  readonly modifyIndex: bigint | undefined;
  readonly lockId: string;
}

/**
 * Whether `entry` is exactly this grant. The session alone proves nothing: the provider's shared
 * session may hold the same key again for a newer grant. The ModifyIndex (unique per write) or the
 * grant's lockId in the value tells that grant from a later one.
 */
export function provesGrant(entry: KvEntry | null | undefined, grant: GrantProof): boolean {
  if (!entry || !isLockEntry(entry) || entry.Session !== grant.sessionId) return false;
  return (grant.modifyIndex !== undefined && BigInt(entry.ModifyIndex) === grant.modifyIndex) || lockIdOf(entry) === grant.lockId;
}

/** Why `entry` is not (any more) this grant, or undefined while it is. */
export function whyNotGrant(entry: KvEntry | null | undefined, grant: GrantProof): string | undefined {
  if (provesGrant(entry, grant)) return undefined;
  if (!entry) return 'the key was deleted';
  if (entry.Session === grant.sessionId) return 'the key was taken again or overwritten (a newer grant or write on the same session)';
  return entry.Session ? 'the key is held by another session' : 'the key was released (session invalidated or released externally)';
}

/**
 * Frees the key if it still holds exactly this grant, with no lock-delay and nothing left behind:
 * `[check-index, unlock, delete]` in one transaction. False when the key is not (any more) this grant.
 * The Go client's Unlock releases by session alone; the provider's shared session may hold the same
 * key again for a newer grant, so the ModifyIndex (or the lockId in the value) must match too.
 */
export async function releaseExact(http: ConsulHttp, grant: GrantProof, signal: AbortSignal): Promise<boolean> {
  let index = grant.modifyIndex;
  for (let round = 0; round < MAX_CAS_ROUNDS; round++) {
    if (index !== undefined && (await unlockAt(http, grant.consulKey, Number(index), grant.sessionId, signal))) return true;
    // The index moved (or was never known): only the grant's own lockId, under its session, proves it.
    const { entry } = await readKey(http, grant.consulKey, true, signal);
    if (!entry || !provesGrant(entry, { ...grant, modifyIndex: undefined })) return false;
    index = BigInt(entry.ModifyIndex);
  }
  return false;
}

/** abandon(): frees the key if it holds the write of the attempt `lockId`, under whichever session. */
export async function releaseAttempt(http: ConsulHttp, consulKey: string, lockId: string, signal: AbortSignal): Promise<void> {
  const { entry } = await readKey(http, consulKey, true, signal);
  if (!entry?.Session || !isLockEntry(entry) || lockIdOf(entry) !== lockId) return;
  await releaseExact(http, { consulKey, sessionId: entry.Session, modifyIndex: BigInt(entry.ModifyIndex), lockId }, signal);
}

/**
 * An operator's release of whoever holds the key. Releasing with the holder's session (not destroying
 * it) frees only this key, at once (no lock-delay), and fails if the key changed hands since the read;
 * destroying the session would also drop the holder's other locks (the session may be shared).
 */
export async function forceRelease(http: ConsulHttp, key: string, consulKey: string, signal: AbortSignal): Promise<boolean> {
  const { entry } = await readKey(http, consulKey, true, signal);
  if (!entry) return false;
  if (!isLockEntry(entry)) throw lockConflict(key, entry);
  if (!entry.Session) return false;
  return unlockAt(http, consulKey, entry.ModifyIndex, entry.Session, signal);
}

/** `[check-index, unlock, delete]`: frees the key held by `session` if it is still at `index`; no lock-delay. */
async function unlockAt(http: ConsulHttp, consulKey: string, index: number, session: string, signal: AbortSignal): Promise<boolean> {
  const ops = [
    { Verb: 'check-index', Key: consulKey, Index: index },
    { Verb: 'unlock', Key: consulKey, Session: session },
    { Verb: 'delete', Key: consulKey },
  ] as const;
  return (await transact(http, ops, signal)).ok;
}
