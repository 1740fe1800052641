import type { Capabilities } from '@holdfast/core';
import { MAX_TTL_MS } from '@holdfast/core/backend';

const COMMON = {
  // RedisBackend.resumeGrant rebuilds plain locks only: a slot's grant also needs its session's
  // forced-release watch, not rebuilt yet.
  noSlotHandOff: 'semaphore slots cannot be handed off yet; plain locks can',
  maxTtlMs: MAX_TTL_MS,
  defaultTtlMs: 30_000,
  fifo: false,
  wakeUp: 'event',
  crossProcess: true,
  renewal: 'per-lock',
} as const;

/** One Redis server: SET NX PX, owner-checked scripts, a per-key counter for tokens. */
export const SINGLE_NODE_CAPABILITIES: Capabilities = Object.freeze({
  ...COMMON,
  // A lease must outlast a round trip plus core's safety margin: a 20 ms lease was already over when
  // a fresh connection's first grant (connect, script load) answered on a loaded machine.
  minTtlMs: 100,
  fencing: 'strict',
  // Plain-lock waiters queue on the server and a free key is refused to anyone but the next live
  // waiter (queue-scripts.ts); only clients that do not queue (redlock, older versions) can jump it.
  fifo: true,
  // Redis checks the expiry on every access to the key, so a crashed holder's key is free at its TTL.
  expiryGraceMs: 0,
  // Read-write waiters line up on the server (mode-scripts.ts): a reader never passes a waiting writer.
  writerPreferred: true,
});

/**
 * Redlock over independent servers. Tokens are informational only: per-node counters can be lost
 * with a node (no persistence) or disagree, so no token from a quorum grant is safe to fence with.
 */
export const QUORUM_CAPABILITIES: Capabilities = Object.freeze({
  ...COMMON,
  minTtlMs: 200,
  fencing: 'none',
  // Nodes set the key one after another within one round trip, so the last copy lapses slightly later.
  expiryGraceMs: 50,
  // slot-quorum.ts: with n nodes each admitting `limit` holders, a slot held on q > n * limit / (limit + 1)
  // nodes keeps the count at the limit; a majority is not enough (3 nodes, limit 2: holders on {n1,n2},
  // {n2,n3} and {n1,n3} would each hold a majority).
  semaphoreNeeds:
    'a slot is held on more than nodes * limit / (limit + 1) nodes: a majority for a limit of 1, every node of 3 for a limit of 2 or more, 4 of 5 for a limit of 2 or 3',
  // No line of waiters: places in different orders on different nodes could each head one node and none a majority.
  writerPreferred: false,
});
