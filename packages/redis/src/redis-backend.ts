import type { Capabilities, LockInfo } from '@holdfast/core';
import {
  type Busy,
  busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  granted,
  type LockBackend,
  type WaitOptions,
} from '@holdfast/core/backend';
import { acquire, type SplitVoteSettings } from './acquire.js';
import { QUORUM_CAPABILITIES, SINGLE_NODE_CAPABILITIES } from './capabilities.js';
import { ForcedReleases } from './forced-releases.js';
import { type InspectReply, inspectionOf } from './inspection.js';
import type { KeyNames } from './key-names.js';
import { listLocks } from './listing.js';
import type { NodeSet } from './node-set.js';
import { QueuedWaiters } from './queued-waiters.js';
import { RedisGrant, releaseLock } from './redis-grant.js';
import { ReleaseSubscription } from './release-subscription.js';
import { FORCE_RELEASE, INSPECT } from './scripts.js';
import { untilAborted } from './until-aborted.js';
import { type WakeHint, WakeUps } from './wake-ups.js';

export interface RedisBackendSettings extends SplitVoteSettings {
  /** Longest wait between checks while a key is busy, in case a wake-up was missed. */
  readonly pollIntervalMs: number;
}

const NO_HINT: WakeHint = { since: Infinity, woken: false, freeInMs: Infinity };

/**
 * Locks on one Redis server, or with the Redlock algorithm on several independent ones (see
 * NodeSet): the grant protocol is in acquire.ts, a held lock in redis-grant.ts, waiting in
 * wake-ups.ts and release-subscription.ts, listing in listing.ts. Semaphores are single-node
 * only: single-node-backend.ts.
 */
export class RedisBackend implements LockBackend<WakeHint> {
  readonly name = 'redis';
  readonly capabilities: Capabilities;
  protected readonly wakeUps: WakeUps;
  protected readonly subscription: ReleaseSubscription;
  /** Slot holders waiting to hear of a forced release of their key. */
  protected readonly forced = new ForcedReleases();
  /** Single node: the provider's waiters in server-side queues (a quorum has none). */
  protected readonly queued = new QueuedWaiters();

  constructor(
    protected readonly nodes: NodeSet,
    protected readonly names: KeyNames,
    protected readonly settings: RedisBackendSettings,
  ) {
    this.capabilities = nodes.isQuorum ? QUORUM_CAPABILITIES : SINGLE_NODE_CAPABILITIES;
    this.wakeUps = new WakeUps(settings.pollIntervalMs);
    this.subscription = new ReleaseSubscription(nodes.nodes, names, this.wakeUps, this.forced, this.queued);
  }

  async tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<WakeHint>> {
    const attempt = this.wakeUps.attemptStarted(request.key);
    try {
      const outcome = await acquire(this.nodes, this.names.of(request.key), request, call, this.settings);
      return outcome instanceof RedisGrant ? granted(outcome) : busy({ ...attempt, freeInMs: outcome.freeInMs });
    } finally {
      this.wakeUps.attemptEnded(request.key);
    }
  }

  waitForChange(key: string, answer: Busy<WakeHint>, options: WaitOptions): Promise<void> {
    this.subscription.start();
    return this.wakeUps.wait(key, answer.wake ?? NO_HINT, options);
  }

  async abandon(request: GrantRequest, { signal }: CallContext): Promise<void> {
    await releaseLock(this.nodes, this.names.of(request.key), request.lockId, signal);
  }

  async inspect(key: string, { signal }: CallContext): Promise<LockInfo | null> {
    const { lock, holder } = this.names.of(key);
    const votes = await this.nodes.ask(
      signal,
      'inspect',
      (client) => INSPECT.run(client, [lock, holder], []) as Promise<InspectReply | null>,
    );
    if (votes.tooManyFailed) throw votes.failure('inspect');
    return inspectionOf(key, votes.answers, this.nodes.quorum, this.nodes.size);
  }

  list(prefix: string, { signal }: CallContext): Promise<readonly LockInfo[]> {
    return listLocks(this.nodes, this.names, prefix, signal);
  }

  async forceRelease(key: string, { signal }: CallContext): Promise<boolean> {
    const { lock, holder, slots, queue, queueExpiries, channel } = this.names.of(key);
    const votes = await this.nodes.ask(
      signal,
      'forceRelease',
      (client) => FORCE_RELEASE.run(client, [lock, holder, slots, queue, queueExpiries], [channel]) as Promise<number>,
    );
    if (votes.tooManyFailed) throw votes.failure('forceRelease');
    return votes.count((answer) => answer === 1) > 0;
  }

  /** Quits politely; when `signal` aborts (close ran out of time) the sockets are closed at once. */
  async close({ signal }: CallContext): Promise<void> {
    this.wakeUps.close();
    this.forced.close();
    // Core aborted the queued waiters before closing: their entries' removals go out before QUIT.
    await untilAborted(this.queued.drained(), signal, 'close').catch(() => undefined);
    await this.nodes.close(signal);
  }
}
