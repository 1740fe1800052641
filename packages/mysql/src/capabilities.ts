import type { Capabilities } from '@holdfast/core';

/** Leases in a table, judged on the server's clock, with a fence counter per key; waiters poll. */
export const MYSQL_CAPABILITIES: Capabilities = Object.freeze({
  minTtlMs: 100,
  maxTtlMs: 7 * 24 * 3_600_000,
  defaultTtlMs: 30_000,
  fencing: 'strict',
  fifo: false,
  wakeUp: 'poll',
  crossProcess: true,
  // Every statement judges the stored expiry against the server's clock: a crashed holder's row is free at its end.
  expiryGraceMs: 0,
  renewal: 'per-lock',
  // Read-write locks: no writerPreferred. Waiters poll, with no line of places, so a steady stream of
  // readers can keep a waiting writer out (docs/read-write.md).
});
