import { LockConflictError } from '@holdfast/core';
import type { CallContext, SlotRequest } from '@holdfast/core/backend';
import type { ForcedReleases } from './forced-releases.js';
import type { LockKeys } from './key-names.js';
import type { NodeSet } from './node-set.js';
import { confirmReplicated } from './replica-sync.js';
import type { Session } from './session.js';
import { onTheNode } from './single-node-call.js';
import { RedisSlot, releaseSlot } from './slot-grant.js';
import { TAKE_SLOT } from './slot-scripts.js';
import { BACKGROUND } from './until-aborted.js';
import type { Refusal } from './wake-ups.js';

/** TAKE_SLOT's answer: [1, token, acquiredAtMs]; [0, ms until the earliest lease ends]; [-1] a plain lock; [-2, limit] another limit. */
type TakeReply = [code: 1, token: string, acquiredAtMs: string] | [code: 0, freeInMs: number] | [code: -1] | [code: -2, limit: number];

/**
 * One attempt at a slot of a semaphore on the only server: the TAKE_SLOT script decides on the
 * server's clock, with the lapsed slots pruned first. Busy answers carry the time until the
 * earliest slot's lease ends, when the key's waiters are woken if no release came first.
 */
export async function takeSlot(
  nodes: NodeSet,
  keys: LockKeys,
  request: SlotRequest,
  call: CallContext,
  forced: ForcedReleases,
): Promise<RedisSlot | Refusal> {
  const reason = request.reason === undefined ? ['', '0'] : [request.reason, '1'];
  const args = [request.lockId, request.ttlMs, request.limit, request.owner, ...reason];
  const started = Date.now();
  const { value: reply, session } = await onTheNode(
    nodes,
    call,
    'acquire',
    (client) => TAKE_SLOT.run(client, [keys.lock, keys.slots, keys.fence, ...keys.legacyFence], args) as Promise<TakeReply>,
  );
  switch (reply[0]) {
    case 1: {
      await slotReplicated(nodes, keys, request.lockId, session, call);
      const fields = {
        key: request.key,
        lockId: request.lockId,
        token: BigInt(reply[1]),
        acquiredAt: new Date(Number(reply[2])),
        leaseEnd: started + request.ttlMs,
        onLost: request.onLost,
      };
      return new RedisSlot(nodes, keys, fields, session, forced);
    }
    case 0:
      return { freeInMs: Math.max(0, reply[1]) };
    case -1:
      throw new LockConflictError(request.key, 'it is held as a plain lock, not a semaphore');
    case -2:
      throw new LockConflictError(
        request.key,
        reply[1] === -1
          ? 'it is in use as a semaphore whose limit record is missing'
          : `it is in use as a semaphore with limit ${reply[1]}, not ${request.limit}`,
      );
  }
}

/**
 * With the `replicas` option, a slot counts only once that many replicas hold it, as a plain lock's
 * grant does (single-node-grant.ts): a failover to a replica that never saw it would let one more
 * holder in. Not replicated in time, the slot is given back in the background and the attempt fails.
 */
async function slotReplicated(
  nodes: NodeSet,
  keys: LockKeys,
  lockId: string,
  session: Session | undefined,
  call: CallContext,
): Promise<void> {
  const sync = nodes.replicaSync;
  if (!sync || !session) return;
  try {
    await confirmReplicated(session.client, keys.lock, sync, call, 'acquire');
  } catch (error) {
    void releaseSlot(nodes, keys, lockId, BACKGROUND).catch(() => undefined);
    throw error;
  }
}
