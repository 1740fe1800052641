import type { Capabilities } from '@holdfast/core';
import { MAX_TTL_MS } from '@holdfast/core/backend';

/** Leases in a table, judged on the server's clock, with a fence counter per key. */
export const POSTGRES_CAPABILITIES: Capabilities = Object.freeze({
  minTtlMs: 100,
  maxTtlMs: MAX_TTL_MS,
  defaultTtlMs: 30_000,
  fencing: 'strict',
  fifo: false,
  wakeUp: 'event',
  crossProcess: true,
  // Every statement judges the stored expiry against now(): a crashed holder's row is free at its end.
  expiryGraceMs: 0,
  renewal: 'per-lock',
  // Read-write locks: no writerPreferred. Waiters poll and are woken by NOTIFY, with no line of places,
  // so a steady stream of readers can keep a waiting writer out (docs/read-write.md).
});

/** Session mode: advisory locks held by a connection each, kept alive by the backend's heartbeat. */
export const POSTGRES_SESSION_CAPABILITIES: Capabilities = Object.freeze({
  ...POSTGRES_CAPABILITIES,
  // The server's idle clock starts once it has answered the holder's last request, up to a round
  // trip after the moment the holder counts from, so a silent holder's session ends that much later.
  expiryGraceMs: 100,
  renewal: 'backend',
  // Read-write locks: no writerPreferred. A waiting writer's exclusive request keeps new readers out
  // while it waits in PostgreSQL's lock queue, but the wait then ends and the writer tries again,
  // and readers woken at the same moment can get in first (docs/semantics-postgres.md).
  noHandOff: 'session mode: an advisory lock belongs to the server connection that took it; use lease mode to hand locks over',
});
