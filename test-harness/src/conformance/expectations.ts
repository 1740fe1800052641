import type { CaseContext } from './support.js';

/**
 * Whether a lock must carry an expiresAt: always where core renews each lock (the backend has a
 * per-lock expiry), and for a lock taken with autoRenew: false, which lapses at its TTL everywhere.
 * Only a lock kept alive by the backend itself (a session, pings) may have none.
 */
export function expectsExpiry(c: CaseContext, autoRenew: boolean): boolean {
  return c.capabilities.renewal === 'per-lock' || !autoRenew;
}

/**
 * Whether inspect() must report an expiresAt: where the backend keeps a per-lock expiry. Backends
 * that renew by session may not know a lock's end (Consul's session TTL), and may report null.
 */
export function expectsInspectExpiry(c: CaseContext): boolean {
  return c.capabilities.renewal === 'per-lock';
}
