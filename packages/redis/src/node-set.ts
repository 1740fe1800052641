import type { CallContext } from '@holdfast/core/backend';
import type { Redis } from 'ioredis';
import type { RedisNode } from './redis-node.js';
import type { ReplicaSync } from './replica-sync.js';
import type { Session } from './session.js';
import { untilAborted } from './until-aborted.js';
import { type Answer, type Decision, poll, type Votes } from './votes.js';

export interface QuorumSettings {
  /** Quorum mode: clock drift allowance per ms of TTL (redlock: 0.01, plus 2 ms). */
  readonly driftFactor: number;
  /**
   * Quorum mode: once a majority has settled a grant or a renewal, how long the others may still
   * answer (their votes count), at most a twentieth of the TTL. A node that takes longer is treated
   * as failed for this call.
   */
  readonly straggleMs: number;
  /** One server with replicas (Sentinel, Cluster): WAIT for this many after each grant and renewal. */
  readonly replicaSync?: ReplicaSync;
}

export interface AskOptions<T> {
  /** The answer of a node never connected to: no command of ours can have reached it. */
  readonly ifNeverConnected?: T;
  readonly decision?: Decision<T>;
}

/**
 * The servers locks live on: one (the majority is that node, no clock-drift allowance) or several
 * independent ones (Redlock: an operation counts when a majority agrees).
 */
export class NodeSet {
  readonly quorum: number;

  constructor(
    readonly nodes: readonly RedisNode[],
    private readonly settings: QuorumSettings,
  ) {
    this.quorum = Math.floor(nodes.length / 2) + 1;
  }

  /** Set when grants and renewals count only once replicated (the `replicas` option). */
  get replicaSync(): ReplicaSync | undefined {
    return this.settings.replicaSync;
  }

  get isQuorum(): boolean {
    return this.nodes.length > 1;
  }

  get size(): number {
    return this.nodes.length;
  }

  /**
   * Runs `command` on every node at once, each on its current session; a node that is not
   * connected answers with an error. Settles when every node answered, once `decision` says the
   * answers so far settle the outcome, or as soon as `call` aborts (a BackendError).
   */
  async ask<T>(
    call: CallContext,
    operation: string,
    command: (client: Redis) => Promise<T>,
    options: AskOptions<T> = {},
  ): Promise<Votes<T>> {
    const { ifNeverConnected, decision } = options;
    const asked = poll<T>(this.nodes, this.quorum, (node) => answerOf(node, command, ifNeverConnected, call), decision);
    const votes = await untilAborted(asked, call, operation);
    // A node that refuses the configuration (its db) is a configuration error, whatever the others said.
    if (votes.refusal) throw votes.refusal;
    return votes;
  }

  /** The wait for slow nodes after a majority decided comes out of the lease: at most a twentieth of it. */
  straggleMs(ttlMs: number): number {
    return Math.min(this.settings.straggleMs, ttlMs / 20);
  }

  /** Redlock: what is left of the lease once the elapsed time and the clock drift are deducted. */
  validity(ttlMs: number, started: number): number {
    if (!this.isQuorum) return ttlMs;
    const drift = Math.round(this.settings.driftFactor * ttlMs) + 2;
    return ttlMs - (Date.now() - started) - drift;
  }

  /** Quits politely; when `signal` aborts (close ran out of time) the sockets are closed at once. */
  async close(signal: AbortSignal): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.close(signal)));
  }
}

/**
 * Commands waiting for a node's first connection: while any wait, the node may yet run a grant
 * asked for before it was reached, so a release cannot take it for one that holds nothing.
 */
const waitingForFirstConnection = new WeakMap<RedisNode, number>();

/** One node's answer, on its current session (no extra turn of the event loop when it is connected). */
function answerOf<T>(
  node: RedisNode,
  command: (client: Redis) => Promise<T>,
  ifNeverConnected: T | undefined,
  call: CallContext,
): Promise<Answer<T>> {
  if (ifNeverConnected !== undefined && !node.everConnected && !waitingForFirstConnection.get(node))
    return Promise.resolve({ value: ifNeverConnected, session: undefined });
  const run = (session: Session): Promise<Answer<T>> =>
    command(session.client).then(
      (value) => ({ value, session }),
      (error: unknown) => {
        node.commandFailed(session, error);
        throw error;
      },
    );
  const session = node.usableSession;
  if (session) return run(session);
  // Commands waiting for the connection are sent in the order they were asked for: a release after the grant.
  const waiting = (waitingForFirstConnection.get(node) ?? 0) + 1;
  waitingForFirstConnection.set(node, waiting);
  const connected = node.ready(call);
  connected.then(done, done);
  return connected.then(run);

  function done(): void {
    waitingForFirstConnection.set(node, (waitingForFirstConnection.get(node) ?? 1) - 1);
  }
}
