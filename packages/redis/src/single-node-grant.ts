import { LockConflictError } from '@holdfast/core';
import type { CallContext, GrantRequest } from '@holdfast/core/backend';
import { holderValue } from './holder-record.js';
import type { LockKeys } from './key-names.js';
import type { NodeSet } from './node-set.js';
import { ACQUIRE_IN_TURN } from './queue-scripts.js';
import type { QueuedWaiter } from './queued-waiters.js';
import { RedisGrant, releaseLock } from './redis-grant.js';
import { confirmReplicated } from './replica-sync.js';
import { SentCommands } from './sent-commands.js';
import { onTheNode } from './single-node-call.js';
import { BACKGROUND } from './until-aborted.js';
import type { Answer } from './votes.js';

/** ACQUIRE_IN_TURN's answer: [1, token] when granted; [0, pttl, atHead] when busy; [-1] on a semaphore's key. */
type InTurnReply = [code: -1 | 0 | 1, tokenOrPttl: string | number, atHead?: number];

/** How long a queued waiter's place lasts after its last refresh (the server also expires the queue keys after it). */
export const QUEUE_ENTRY_TTL_MS = 2000;

/** Busy: how long the holder's lease may still last (Infinity: unknown), and whether the requester is next. */
export interface NotYourTurn {
  readonly freeInMs: number;
  readonly atHead: boolean;
}

/**
 * One grant attempt on the only server, in turn: refused while another live waiter heads the
 * key's queue. With `waiter`, the requester's entry is added or refreshed in the same script, and
 * The grant's acquiredAt, in the holder record too, is the local moment the attempt was sent
 * (`sentAt`), so the script reads no clock. A failed attempt may have been applied: it is
 * undone in the background before the error is thrown.
 */
export async function grantInTurn(
  nodes: NodeSet,
  keys: LockKeys,
  request: GrantRequest,
  call: CallContext,
  waiter?: QueuedWaiter,
  /** `fairness: 'barging'`: a free key is granted even while another waiter is next. */
  barging = false,
): Promise<RedisGrant | NotYourTurn> {
  const sentAt = Date.now();
  const args: (string | number)[] = [request.lockId, request.ttlMs, holderValue(request.lockId, sentAt, request.owner, request.reason)];
  // A plain attempt sends no waiter arguments: fewer bytes to write and parse, on both sides.
  if (waiter) args.push(waiter.waiterId, waiter.entryLifeMs(), QUEUE_ENTRY_TTL_MS);
  if (barging) {
    if (!waiter) args.push('', 0, 0);
    args.push('1');
  }
  let answer: Answer<InTurnReply>;
  // The undo waits for the script itself (SentCommands says why). A waiter's attempts also run on the
  // server in the order they were made, and its leaving the queue after them: an abandoned attempt
  // (retried as EVAL after NOSCRIPT) landing after a later one's grant would queue the waiter again.
  const sent = waiter?.sent ?? new SentCommands();
  try {
    answer = await onTheNode(nodes, call, 'acquire', (client) =>
      sent.after(
        client,
        () =>
          ACQUIRE_IN_TURN.run(
            client,
            [keys.lock, keys.fence, keys.queue, keys.queueExpiries, ...keys.legacyFence],
            args,
          ) as Promise<InTurnReply>,
      ),
    );
  } catch (error) {
    void releaseLock(nodes, keys, request.lockId, BACKGROUND, sent).catch(() => undefined);
    throw error;
  }
  const { value: reply, session } = answer;
  if (reply[0] === -1) throw new LockConflictError(request.key, 'it is in use as a semaphore, not a plain lock');
  if (reply[0] === 0) {
    const pttl = Number(reply[1]);
    return { freeInMs: pttl === -1 ? Infinity : Math.max(0, pttl), atHead: reply[2] === 1 };
  }
  const sync = nodes.replicaSync;
  if (sync && session) {
    try {
      await confirmReplicated(session.client, keys.lock, sync, call, 'acquire');
    } catch (error) {
      // Not on enough replicas: a failover now could grant the key again, so the grant is withdrawn.
      void releaseLock(nodes, keys, request.lockId, BACKGROUND).catch(() => undefined);
      throw error;
    }
  }
  const fields = {
    lockId: request.lockId,
    token: BigInt(reply[1]),
    acquiredAt: new Date(sentAt),
    leaseEnd: sentAt + request.ttlMs,
    onLost: request.onLost,
  };
  return new RedisGrant(nodes, keys, fields, session ? [session] : []);
}
