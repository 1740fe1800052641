import type { LockInfo } from '@holdfast/core';
import {
  busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  granted,
  isModeRequest,
  isSlotRequest,
  type ModeRequest,
  type SlotRequest,
} from '@holdfast/core/backend';
import { QUORUM_CAPABILITIES } from './capabilities.js';
import { ForcedReleases } from './forced-releases.js';
import type { KeyNames } from './key-names.js';
import type { NodeSet } from './node-set.js';
import { acquire, type SplitVoteSettings } from './quorum-acquire.js';
import { modeShare, type QuorumShare, slotShare } from './quorum-share.js';
import { QuorumShareGrant, releaseShare } from './quorum-share-grant.js';
import { quorumShareHolders } from './quorum-share-holders.js';
import { takeShare } from './quorum-share-take.js';
import { RedisBackend, type RedisBackendSettings } from './redis-backend.js';
import { RedisGrant } from './redis-grant.js';
import type { WakeHint } from './wake-ups.js';

/**
 * How often a waiting read-write acquire tries again when no wake-up came first: a release wakes
 * one waiter of the provider, which suits a lock, not readers of whom one release can let many in
 * (as on one server, single-node-backend.ts).
 */
const MODE_POLL_MS = 50;

/**
 * Locks with the Redlock algorithm on several independent servers (see NodeSet): the grant
 * protocol is in quorum-acquire.ts. Semaphore slots and read-write grants run the single server's
 * scripts on every node and count on the nodes that hold them (quorum-share*.ts; a slot needs more
 * than a majority, slot-quorum.ts says why). Waiters wait on release messages and polls (no
 * server-side queue: capabilities.fifo and writerPreferred are false).
 */
export class QuorumBackend extends RedisBackend {
  /** Slot holders waiting to hear of a forced release of their key. */
  private readonly forced: ForcedReleases;

  constructor(
    nodes: NodeSet,
    names: KeyNames,
    private readonly quorumSettings: RedisBackendSettings & SplitVoteSettings,
  ) {
    const forced = new ForcedReleases();
    super(nodes, names, quorumSettings, QUORUM_CAPABILITIES, { forced });
    this.forced = forced;
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

  tryGrantSlot(request: SlotRequest, call: CallContext): Promise<GrantOutcome<WakeHint>> {
    return this.tryShare(request, this.shareOf(request), call);
  }

  tryGrantMode(request: ModeRequest, call: CallContext): Promise<GrantOutcome<WakeHint>> {
    return this.tryShare(request, this.shareOf(request), call);
  }

  slotHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return quorumShareHolders(this.nodes, this.names.of(key), key, 'slots', call);
  }

  modeHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return quorumShareHolders(this.nodes, this.names.of(key), key, 'modes', call);
  }

  override async abandon(request: GrantRequest, call: CallContext): Promise<void> {
    const share = this.shareOf(request);
    if (!share) return super.abandon(request, call);
    await releaseShare(this.nodes, share, call);
  }

  override async close(call: CallContext): Promise<void> {
    this.forced.close();
    await super.close(call);
  }

  private shareOf(request: SlotRequest | ModeRequest): QuorumShare;
  private shareOf(request: GrantRequest): QuorumShare | undefined;
  private shareOf(request: GrantRequest): QuorumShare | undefined {
    const keys = this.names.of(request.key);
    if (isSlotRequest(request)) return slotShare(keys, request, this.nodes.size);
    if (isModeRequest(request)) return modeShare(keys, request, this.nodes.quorum);
    return undefined;
  }

  private async tryShare(request: GrantRequest, share: QuorumShare, call: CallContext): Promise<GrantOutcome<WakeHint>> {
    const attempt = this.wakeUps.attemptStarted(request.key);
    let outcome: Awaited<ReturnType<typeof takeShare>> | undefined;
    try {
      outcome = await takeShare(this.nodes, share, request, call, this.quorumSettings, this.forced);
    } finally {
      this.wakeUps.attemptEnded(request.key, outcome instanceof QuorumShareGrant);
    }
    if (!(outcome instanceof QuorumShareGrant))
      return busy({ ...attempt, freeInMs: share.isSlot ? outcome.freeInMs : Math.min(outcome.freeInMs, MODE_POLL_MS) });
    // A slot's holder hears of a forced release of the key through the provider's one subscription.
    if (share.isSlot) this.subscription.start();
    return granted(outcome);
  }
}
