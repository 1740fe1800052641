import { busy, type CallContext, type GrantOutcome, type GrantRequest, granted } from '@holdfast/core/backend';
import { QUORUM_CAPABILITIES } from './capabilities.js';
import type { KeyNames } from './key-names.js';
import type { NodeSet } from './node-set.js';
import { acquire, type SplitVoteSettings } from './quorum-acquire.js';
import { RedisBackend, type RedisBackendSettings } from './redis-backend.js';
import { RedisGrant } from './redis-grant.js';
import type { WakeHint } from './wake-ups.js';

/**
 * Locks with the Redlock algorithm on several independent servers (see NodeSet): the grant
 * protocol is in quorum-acquire.ts. Its waiters wait on release messages and polls (no server-side
 * queue: capabilities.fifo is false), and it has no semaphores (see QUORUM_CAPABILITIES).
 */
export class QuorumBackend extends RedisBackend {
  constructor(
    nodes: NodeSet,
    names: KeyNames,
    private readonly quorumSettings: RedisBackendSettings & SplitVoteSettings,
  ) {
    super(nodes, names, quorumSettings, QUORUM_CAPABILITIES);
  }

  async tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<WakeHint>> {
    const attempt = this.wakeUps.attemptStarted(request.key);
    try {
      const outcome = await acquire(this.nodes, this.names.of(request.key), request, call, this.quorumSettings);
      return outcome instanceof RedisGrant ? granted(outcome) : busy({ ...attempt, freeInMs: outcome.freeInMs });
    } finally {
      this.wakeUps.attemptEnded(request.key);
    }
  }
}
