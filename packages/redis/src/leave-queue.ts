import type { CallContext } from '@holdfast/core/backend';
import type { LockKeys } from './key-names.js';
import type { NodeSet } from './node-set.js';
import { LEAVE_QUEUE } from './queue-scripts.js';
import type { QueuedWaiter } from './queued-waiters.js';

/**
 * Removes a waiter's entry from the key's queue (its acquire ended without a lock), after every
 * attempt of its place settled on the server: an attempt core stopped waiting for may still land,
 * and one retried as EVAL after NOSCRIPT would otherwise queue the waiter again behind the removal.
 */
export async function leaveQueue(nodes: NodeSet, keys: LockKeys, waiter: QueuedWaiter, call: CallContext): Promise<void> {
  const votes = await nodes.ask(
    call,
    'leave the queue',
    // EVAL, not EVALSHA: a server that does not know the script must not get it one round trip later, after QUIT.
    (client) =>
      waiter.sent.after(client, () =>
        LEAVE_QUEUE.evaluate(client, [keys.queue, keys.queueExpiries, keys.lock], [waiter.waiterId, keys.channel]),
      ),
    // A server never reached has no entry of ours: close() need not wait for its first connection.
    { ifNeverConnected: 0 },
  );
  if (votes.tooManyFailed) throw votes.failure('leave the queue');
}
