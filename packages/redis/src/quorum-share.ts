import { LockConflictError } from '@holdfast/core';
import type { GrantRequest, ModeRequest, SlotRequest } from '@holdfast/core/backend';
import type { Redis } from 'ioredis';
import type { LockKeys } from './key-names.js';
import { EXTEND_MODE, MODE_HELD, RELEASE_MODE, TAKE_MODE } from './mode-scripts.js';
import { SYNC_SHARE_TOKEN } from './quorum-scripts.js';
import { slotQuorum } from './slot-quorum.js';
import { EXTEND_SLOT, RELEASE_SLOT, SLOT_HELD, TAKE_SLOT } from './slot-scripts.js';

/** A take script's answer on one node: [1, token, at]; [0, ms until a holder's lease ends (-1: none)]; [-1] another kind of key; [-2, limit] another limit. */
export type ShareReply =
  | [code: 1, token: string, acquiredAtMs: string]
  | [code: 0, freeInMs: number]
  | [code: -1]
  | [code: -2, limit: number];

/**
 * A grant that several holders share on each node of a quorum (a semaphore slot, a reader's or
 * the writer's grant), run with the single server's scripts on every node: what differs between
 * the two is here, the quorum protocol is in quorum-share-take.ts and quorum-share-grant.ts.
 */
export interface QuorumShare {
  /** The nodes that must hold it (more than a majority for a semaphore with a limit above 1, see slot-quorum.ts). */
  readonly needed: number;
  /** Set for a slot: a forced release of its key names it (forced-releases.ts). */
  readonly isSlot: boolean;
  take(client: Redis): Promise<ShareReply>;
  extend(client: Redis, ttlMs: number): Promise<number>;
  release(client: Redis): Promise<number>;
  held(client: Redis): Promise<number>;
  /** TokenSync's write on one node (as EVAL: nothing the holder sends later may overtake it). */
  syncToken(client: Redis, level: bigint, token: bigint): Promise<unknown>;
  /** The conflict a [-1] or [-2] answer means. */
  conflict(reply: ShareReply): LockConflictError;
}

function reasonArgs(request: GrantRequest): [string, string] {
  return request.reason === undefined ? ['', '0'] : [request.reason, '1'];
}

/** A semaphore slot: TAKE_SLOT and its siblings on each node, held on slotQuorum(nodes, limit) of them. */
export function slotShare(keys: LockKeys, request: SlotRequest, nodes: number): QuorumShare {
  const { lockId } = request;
  // Counter only: the nodes' counters are kept level (FENCE_BUMP).
  const takeArgs = [lockId, request.ttlMs, request.limit, request.owner, ...reasonArgs(request), '1'];
  return {
    needed: slotQuorum(nodes, request.limit),
    isSlot: true,
    take: (client) => TAKE_SLOT.run(client, [keys.lock, keys.slots, keys.fence, ...keys.legacyFence], takeArgs) as Promise<ShareReply>,
    extend: (client, ttlMs) => EXTEND_SLOT.run(client, [keys.lock, keys.slots], [lockId, ttlMs]) as Promise<number>,
    release: (client) => RELEASE_SLOT.run(client, [keys.lock, keys.slots], [lockId, keys.channel]) as Promise<number>,
    held: (client) => SLOT_HELD.run(client, [keys.lock], [lockId]) as Promise<number>,
    syncToken: (client, level, token) => SYNC_SHARE_TOKEN.evaluate(client, [keys.fence, keys.slots], [`${level}`, `${token}`, lockId]),
    conflict: (reply) => {
      if (reply[0] === -1) return new LockConflictError(request.key, 'it is held as a plain lock, not a semaphore');
      const limit = reply[0] === -2 ? reply[1] : -1;
      return new LockConflictError(
        request.key,
        limit === -1
          ? 'it is in use as a semaphore whose limit record is missing'
          : `it is in use as a semaphore with limit ${limit}, not ${request.limit}`,
      );
    },
  };
}

/**
 * A reader's or the writer's grant: TAKE_MODE on each node, held on a majority. Readers and a
 * writer on two majorities meet on a node, which refuses one of them; so do two writers. No line:
 * places of waiters in different orders on different nodes could each head one node and none a
 * majority, for ever (so on a quorum a waiting writer is not preferred, capabilities.writerPreferred).
 */
export function modeShare(keys: LockKeys, request: ModeRequest, majority: number): QuorumShare {
  const { lockId } = request;
  // No place (no line on a quorum); counter only: the nodes' counters are kept level (FENCE_BUMP).
  const takeArgs = [lockId, request.ttlMs, request.mode, request.owner, ...reasonArgs(request), '', 0, '1'];
  return {
    needed: majority,
    isSlot: false,
    take: (client) => TAKE_MODE.run(client, [keys.lock, keys.fence, keys.rwLine, keys.rwLineInfo], takeArgs) as Promise<ShareReply>,
    extend: (client, ttlMs) => EXTEND_MODE.run(client, [keys.lock], [lockId, ttlMs]) as Promise<number>,
    release: (client) => RELEASE_MODE.run(client, [keys.lock], [lockId, keys.channel]) as Promise<number>,
    held: (client) => MODE_HELD.run(client, [keys.lock], [lockId]) as Promise<number>,
    syncToken: (client, level, token) =>
      SYNC_SHARE_TOKEN.evaluate(client, [keys.fence, keys.lock], [`${level}`, `${token}`, `r:${lockId}`]),
    conflict: () => new LockConflictError(request.key, 'it is in use as a plain lock or a semaphore, not a read-write lock'),
  };
}
