import type { CallContext } from '@holdfast/core/backend';
import type { Redis } from 'ioredis';
import type { NodeSet } from './node-set.js';
import { untilAborted } from './until-aborted.js';
import { type Answer, Votes } from './votes.js';

/**
 * Runs `command` on the only server (single-node slots, read-write grants, locks): its answer and the session
 * it came on, or the call's BackendError.
 */
export function onTheNode<T>(
  nodes: NodeSet,
  call: CallContext,
  operation: string,
  command: (client: Redis) => Promise<T>,
): Promise<Answer<T>> {
  const node = nodes.nodes[0]!;
  const session = node.usableSession;
  if (!session) return throughTheNodeSet(nodes, call, operation, command);
  // Connected (nearly always): what NodeSet.ask would do for one node, without a poll and its Votes
  // per command, which cost as much client CPU as the rest of the adapter's part of a grant.
  const work = command(session.client).then(
    (value) => ({ value, session }),
    (error: unknown) => {
      node.commandFailed(session, error);
      throw new Votes([{ status: 'rejected', reason: error }], nodes.quorum, 1).failure(operation);
    },
  );
  return untilAborted(work, call, operation);
}

/** The general path: waits for the node's first connection, or fails with why it is not connected. */
async function throughTheNodeSet<T>(
  nodes: NodeSet,
  call: CallContext,
  operation: string,
  command: (client: Redis) => Promise<T>,
): Promise<Answer<T>> {
  const votes = await nodes.ask(call, operation, command);
  if (votes.tooManyFailed) throw votes.failure(operation);
  return { value: votes.answers[0]!, session: votes.votesFor(() => true)[0] };
}
