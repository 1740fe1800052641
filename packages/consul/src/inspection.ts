import { LockConflictError, type LockInfo } from '@holdfast/core';
import type { ConsulHttp } from './consul-http.js';
import { LOCK_FLAG } from './constants.js';
import { decodeValue, isLockEntry, type KvEntry, lockDelayRefusal, readKey, transact } from './kv.js';
import { decodeLockValue } from './lock-value.js';
import { sessionInfo } from './sessions.js';

/**
 * What inspect() reports about `<prefix>/<key>`. `probeSession` gives a session id for the
 * lock-delay probe (the provider's shared session).
 */
export async function inspectKey(
  http: ConsulHttp,
  key: string,
  consulKey: string,
  probeSession: () => Promise<string>,
  signal: AbortSignal,
): Promise<LockInfo | null> {
  const { entry } = await readKey(http, consulKey, true, signal);
  if (!entry) return null;
  if (!isLockEntry(entry)) throw lockConflict(consulKey, entry);
  if (!entry.Session) {
    return (await lockDelayInForce(http, consulKey, await probeSession(), signal)) ? delayedInfo(key, consulKey, entry) : null;
  }
  const session = await sessionInfo(http, entry.Session, signal);
  const raw = decodeValue(entry);
  const value = decodeLockValue(raw);
  return {
    key,
    owner: value?.owner ?? (session ? `${session.Name}@${session.Node}` : `session ${entry.Session}`),
    reason: value?.reason,
    // A foreign holder (e.g. `consul lock`) records no time: report "now" and say so in details.
    acquiredAt: value ? new Date(value.acquiredAt) : new Date(),
    expiresAt: null,
    token: BigInt(entry.ModifyIndex),
    details: {
      consulKey,
      session: entry.Session,
      sessionName: session?.Name ?? null,
      node: session?.Node ?? null,
      sessionTtl: session?.TTL ?? null,
      lockDelayMs: session ? Math.round(session.LockDelay / 1e6) : null,
      lockIndex: entry.LockIndex,
      modifyIndex: entry.ModifyIndex,
      lockDelay: false,
      holdfast: value !== null,
      ...(value ? { lockId: value.lockId } : { value: raw, acquiredAtKnown: false }),
    },
  };
}

/**
 * Consul does not publish lock-delays. Probe without side effects: a transaction that would lock
 * the key and then fails a check on purpose is rolled back, and Consul reports a lock-delay first.
 */
async function lockDelayInForce(http: ConsulHttp, consulKey: string, session: string, signal: AbortSignal): Promise<boolean> {
  const result = await transact(http, [
    { Verb: 'lock', Key: consulKey, Session: session, Flags: LOCK_FLAG },
    { Verb: 'check-index', Key: consulKey, Index: 0 },
  ], signal);
  return lockDelayRefusal(result);
}

/** A free key that nobody may take yet: its previous holder's session was invalidated. */
function delayedInfo(key: string, consulKey: string, entry: KvEntry): LockInfo {
  const value = decodeLockValue(decodeValue(entry));
  return {
    key,
    owner: value?.owner ?? '(lock-delay after an invalidated session)',
    reason: value?.reason,
    acquiredAt: value ? new Date(value.acquiredAt) : new Date(),
    expiresAt: null,
    token: BigInt(entry.ModifyIndex),
    details: { consulKey, session: null, lockDelay: true, lockIndex: entry.LockIndex, modifyIndex: entry.ModifyIndex, holdfast: value !== null },
  };
}

export function lockConflict(consulKey: string, entry: KvEntry): LockConflictError {
  return new LockConflictError(consulKey, `existing key does not match lock use (flags ${entry.Flags}, lock flag ${LOCK_FLAG})`);
}
