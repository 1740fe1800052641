import type { ConsulHttp } from './consul-http.js';
import { lockConflict } from './inspection.js';
import { isLockEntry, readKey, transact } from './kv.js';
import { type GrantProof, lockIdOf, provesGrant } from './lock.js';

/** Compare-and-set rounds before a key that keeps changing is left to its session's fate. */
const MAX_CAS_ROUNDS = 3;

/**
 * Frees the key if it still holds exactly this grant, with no lock-delay and nothing left behind:
 * `[check-index, unlock, delete]` in one transaction. False when the key is not (any more) this grant.
 * The Go client's Unlock releases by session alone; the provider's shared session may hold the same
 * key again for a newer grant, so the ModifyIndex (or the lockId in the value) must match too.
 */
export async function releaseExact(http: ConsulHttp, grant: GrantProof, signal: AbortSignal): Promise<boolean> {
  let index = grant.modifyIndex;
  for (let round = 0; round < MAX_CAS_ROUNDS; round++) {
    if (index !== undefined) {
      const result = await transact(
        http,
        [
          { Verb: 'check-index', Key: grant.consulKey, Index: Number(index) },
          { Verb: 'unlock', Key: grant.consulKey, Session: grant.sessionId },
          { Verb: 'delete', Key: grant.consulKey },
        ],
        signal,
      );
      if (result.ok) return true;
    }
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
  const result = await transact(
    http,
    [
      { Verb: 'check-index', Key: consulKey, Index: entry.ModifyIndex },
      { Verb: 'unlock', Key: consulKey, Session: entry.Session },
      { Verb: 'delete', Key: consulKey },
    ],
    signal,
  );
  return result.ok;
}
