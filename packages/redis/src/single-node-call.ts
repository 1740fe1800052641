import type { Redis } from 'ioredis';
import type { NodeSet } from './node-set.js';
import type { Bound } from './until-aborted.js';
import type { Answer } from './votes.js';

/**
 * Runs `command` on the only server (semaphores are single-node only): its answer and the session
 * it came on, or the call's BackendError.
 */
export async function onTheNode<T>(
  nodes: NodeSet,
  bound: Bound,
  operation: string,
  command: (client: Redis) => Promise<T>,
): Promise<Answer<T>> {
  const votes = await nodes.ask(bound, operation, command);
  if (votes.tooManyFailed) throw votes.failure(operation);
  return { value: votes.answers[0]!, session: votes.votesFor(() => true)[0] };
}
