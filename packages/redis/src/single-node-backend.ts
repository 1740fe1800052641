import type { LockInfo } from '@holdfast/core';
import {
  type BackendGrant,
  busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  granted,
  isSlotRequest,
  type QueuedWait,
  type SlotRequest,
} from '@holdfast/core/backend';
import { acquireInQueue } from './queued-acquire.js';
import { RedisBackend } from './redis-backend.js';
import { RedisGrant } from './redis-grant.js';
import { grantInTurn } from './single-node-grant.js';
import { RedisSlot, releaseSlot } from './slot-grant.js';
import { slotHolders } from './slot-holders.js';
import { takeSlot } from './take-slot.js';
import type { WakeHint } from './wake-ups.js';

/**
 * One Redis server: locks, and semaphores (a sorted set per key, see slot-scripts.ts). A quorum has
 * no semaphores (RedisBackend alone): a slot granted by a majority of independent servers is not
 * sound without more work (each node prunes by its own clock, a node that forgot its slots lets
 * the count exceed the limit, and counts of different majorities do not add up).
 */
export class SingleNodeBackend extends RedisBackend {
  /** A queued waiter's first attempt takes a free key nobody queues for (queue-scripts.ts). */
  readonly queuedAcquireTriesFirst = true;

  /** One attempt, refused while a live waiter of the key's queue is next (queue-scripts.ts). */
  override async tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<WakeHint>> {
    const attempt = this.wakeUps.attemptStarted(request.key);
    try {
      const outcome = await grantInTurn(this.nodes, this.names.of(request.key), request, call);
      return outcome instanceof RedisGrant ? granted(outcome) : busy({ ...attempt, freeInMs: outcome.freeInMs });
    } finally {
      this.wakeUps.attemptEnded(request.key);
    }
  }

  /**
   * Plain locks wait in the key's queue on the server, so a release lets one waiter try, whichever
   * provider it is in (queued-acquire.ts); the first wait subscribes the provider's wake channel.
   */
  acquireQueued(request: GrantRequest, wait: QueuedWait): Promise<BackendGrant | null> {
    return acquireInQueue(this.nodes, this.names.of(request.key), this.queued, request, {
      ...wait,
      pollIntervalMs: this.settings.pollIntervalMs,
      // Only a waiter needs it; one that missed a release before it was active is woken once it is.
      onWaiting: () => {
        this.subscription.startWakeChannel();
        wait.onWaiting?.();
      },
    });
  }

  async tryGrantSlot(request: SlotRequest, { signal }: CallContext): Promise<GrantOutcome<WakeHint>> {
    const attempt = this.wakeUps.attemptStarted(request.key);
    let outcome: Awaited<ReturnType<typeof takeSlot>> | undefined;
    try {
      outcome = await takeSlot(this.nodes, this.names.of(request.key), request, signal, this.forced);
    } finally {
      this.wakeUps.attemptEnded(request.key, outcome instanceof RedisSlot);
    }
    if (!(outcome instanceof RedisSlot)) return busy({ ...attempt, freeInMs: outcome.freeInMs });
    // Its holder hears of a forced release of the key through the provider's one subscription.
    this.subscription.start();
    return granted(outcome);
  }

  slotHolders(key: string, { signal }: CallContext): Promise<readonly LockInfo[]> {
    return slotHolders(this.nodes, this.names.of(key), key, signal);
  }

  override async abandon(request: GrantRequest, call: CallContext): Promise<void> {
    if (!isSlotRequest(request)) return super.abandon(request, call);
    await releaseSlot(this.nodes, this.names.of(request.key), request.lockId, call.signal);
  }
}
