import { decodeLockValue, decodeValue, isLockEntry, type KvEntry } from './kv.js';

/** What identifies one grant on the server: the key, the session that took it, the ModifyIndex it got, and its lockId. */
export interface GrantProof {
  readonly consulKey: string;
  readonly sessionId: string;
  /** The key's ModifyIndex as we left it; undefined when unknown (an attempt whose answer never came). */
  readonly modifyIndex: bigint | undefined;
  readonly lockId: string;
}

/** The lockId Holdfast wrote into the key's value, if it is a Holdfast value. */
export function lockIdOf(entry: KvEntry): string | undefined {
  return decodeLockValue(decodeValue(entry))?.lockId;
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
