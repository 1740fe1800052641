import type { Capabilities, LockInfo } from '@holdfast/core';
import { UnsupportedError } from '@holdfast/core';
import {
  type BackendGrant,
  type Busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  isSlotRequest,
  type LockBackend,
  type WaitOptions,
} from '@holdfast/core/backend';
import { type InspectScriptReply, inspectionOf, inspectReplyOf } from './inspection.js';
import type { KeyNames } from './key-names.js';
import { listLocks } from './listing.js';
import type { NodeSet } from './node-set.js';
import { RedisGrant, releaseLock } from './redis-grant.js';
import { ReleaseSubscription, type SingleNodeListeners } from './release-subscription.js';
import { FORCE_RELEASE, INSPECT } from './scripts.js';
import { type WakeHint, WakeUps } from './wake-ups.js';

export interface RedisBackendSettings {
  /** Longest wait between checks while a key is busy, in case a wake-up was missed. */
  readonly pollIntervalMs: number;
}

const NO_HINT: WakeHint = { since: Infinity, woken: false, freeInMs: Infinity };

/**
 * What one server (single-node-backend.ts) and a Redlock quorum (quorum-backend.ts) share: the
 * scripts and key names, a held lock (redis-grant.ts), waiting on release messages (wake-ups.ts,
 * release-subscription.ts), inspection, listing and forced releases. Each sibling grants its own way.
 */
export abstract class RedisBackend implements LockBackend<WakeHint> {
  readonly name = 'redis';
  protected readonly wakeUps: WakeUps;
  protected readonly subscription: ReleaseSubscription;

  constructor(
    protected readonly nodes: NodeSet,
    protected readonly names: KeyNames,
    protected readonly settings: RedisBackendSettings,
    readonly capabilities: Capabilities,
    single?: SingleNodeListeners,
  ) {
    this.wakeUps = new WakeUps(settings.pollIntervalMs);
    this.subscription = new ReleaseSubscription(nodes.nodes, names, this.wakeUps, single);
  }

  abstract tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<WakeHint>>;

  waitForChange(key: string, answer: Busy<WakeHint>, options: WaitOptions): Promise<void> {
    this.subscription.start();
    return this.wakeUps.wait(key, answer.wake ?? NO_HINT, options);
  }

  /** A handed-off plain lock: the grant is its key and lockId; core renews it at once, owner-checked. */
  async resumeGrant(request: GrantRequest, held: { readonly token: bigint; readonly acquiredAt: Date }): Promise<BackendGrant> {
    if (isSlotRequest(request))
      throw new UnsupportedError('redis', 'resume of a semaphore slot', 'slots cannot be handed off yet; plain locks can');
    const fields = { lockId: request.lockId, token: held.token, acquiredAt: held.acquiredAt, leaseEnd: Date.now(), onLost: request.onLost };
    return new RedisGrant(this.nodes, this.names.of(request.key), fields, null);
  }

  async abandon(request: GrantRequest, call: CallContext): Promise<void> {
    await releaseLock(this.nodes, this.names.of(request.key), request.lockId, call);
  }

  async inspect(key: string, call: CallContext): Promise<LockInfo | null> {
    const { lock, holder, fence } = this.names.of(key);
    const votes = await this.nodes.ask(
      call,
      'inspect',
      (client) => INSPECT.run(client, [lock, holder, fence], []) as Promise<InspectScriptReply | null>,
    );
    if (votes.tooManyFailed) throw votes.failure('inspect');
    return inspectionOf(key, votes.answers.map(inspectReplyOf), this.nodes.quorum, this.nodes.size);
  }

  list(prefix: string, call: CallContext): Promise<readonly LockInfo[]> {
    return listLocks(this.nodes, this.names, prefix, call);
  }

  async forceRelease(key: string, call: CallContext): Promise<boolean> {
    const { lock, holder, slots, queue, queueExpiries, channel } = this.names.of(key);
    const votes = await this.nodes.ask(
      call,
      'forceRelease',
      (client) => FORCE_RELEASE.run(client, [lock, holder, slots, queue, queueExpiries], [channel]) as Promise<number>,
    );
    if (votes.tooManyFailed) throw votes.failure('forceRelease');
    return votes.count((answer) => answer === 1) > 0;
  }

  /** Quits politely; when `signal` aborts (close ran out of time) the sockets are closed at once. */
  async close({ signal }: CallContext): Promise<void> {
    this.wakeUps.close();
    await this.nodes.close(signal);
  }
}
