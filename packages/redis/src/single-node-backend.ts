import type { LockInfo } from '@holdfast/core';
import {
  type Busy,
  busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  granted,
  isModeRequest,
  isSlotRequest,
  type ModeRequest,
  type QueuePlace,
  type SlotRequest,
  type WaitOptions,
} from '@holdfast/core/backend';
import { SINGLE_NODE_CAPABILITIES } from './capabilities.js';
import { ForcedReleases } from './forced-releases.js';
import type { KeyNames } from './key-names.js';
import { leaveQueue } from './leave-queue.js';
import { leaveModeLine, modeHolders, RedisModeGrant, releaseMode, takeMode } from './mode-grant.js';
import type { NodeSet } from './node-set.js';
import { QueuedWaiters } from './queued-waiters.js';
import { RedisBackend, type RedisBackendSettings } from './redis-backend.js';
import { RedisGrant } from './redis-grant.js';
import { grantInTurn } from './single-node-grant.js';
import { RedisSlot, releaseSlot } from './slot-grant.js';
import { slotHolders } from './slot-holders.js';
import { takeSlot } from './take-slot.js';
import { untilAborted } from './until-aborted.js';
import type { WakeHint } from './wake-ups.js';

/** How often a waiting read-write acquire tries again when no wake-up came first. */
const MODE_POLL_MS = 50;

/**
 * One Redis server: locks whose waiters queue on the server (queue-scripts.ts), and semaphores (a
 * sorted set per key, see slot-scripts.ts). A quorum (quorum-backend.ts) runs the same slot scripts
 * on every node and needs more than a majority of them per slot (slot-quorum.ts).
 */
export class SingleNodeBackend extends RedisBackend {
  /** The provider's waiters in the keys' server-side queues. */
  private readonly queued: QueuedWaiters;
  /** Slot holders waiting to hear of a forced release of their key. */
  private readonly forced: ForcedReleases;
  /** The places of this provider's waiting read-write acquires that joined a line (they leave it in leaveQueue). */
  private readonly modePlaces = new Set<string>();

  constructor(
    nodes: NodeSet,
    names: KeyNames,
    settings: RedisBackendSettings,
    /** `fairness: 'barging'`: waiters queue to be told of releases, but a free key goes to whoever asks first. */
    private readonly barging = false,
  ) {
    const single = { queued: new QueuedWaiters(), forced: new ForcedReleases() };
    super(nodes, names, settings, SINGLE_NODE_CAPABILITIES, single);
    this.queued = single.queued;
    this.forced = single.forced;
  }

  /**
   * One attempt, refused while a live waiter of the key's queue is next (queue-scripts.ts). A
   * waiting acquire's attempts (with a place) join or refresh the place in that queue and are
   * granted only in its turn, so a release lets one waiter try, whichever provider it is in. A
   * single attempt never queues, and no wait follows it: it leaves the wake-ups alone.
   */
  async tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<WakeHint>> {
    const { place } = request;
    const waiter = place ? this.queued.joined(request.key, place, request.ttlMs) : undefined;
    waiter?.armed();
    const outcome = await grantInTurn(this.nodes, this.names.of(request.key), request, call, waiter, this.barging);
    if (outcome instanceof RedisGrant) {
      // The grant script removed the waiter's entry.
      if (waiter) this.queued.remove(waiter);
      return granted(outcome);
    }
    if (waiter) waiter.atHead = outcome.atHead;
    // The wait that follows is the waiter's own (waitForChange), not the wake-ups': no release counts as missed.
    return busy({ since: Infinity, woken: false, freeInMs: outcome.freeInMs });
  }

  /**
   * Between a queued waiter's attempts: until a release names it, its place needs refreshing, or
   * (next in line) the holder's lease runs out. Other waits (semaphores, observers) use the wake-ups.
   */
  override waitForChange(key: string, answer: Busy<WakeHint>, options: WaitOptions): Promise<void> {
    // A read-write waiter also polls: a release wakes one local waiter, which suits a lock, not a
    // line where one release can let many readers in; the others try again within MODE_POLL_MS.
    if (options.place && this.modePlaces.has(options.place.id)) {
      return super.waitForChange(key, answer, { ...options, timeoutMs: Math.min(options.timeoutMs, MODE_POLL_MS) });
    }
    const waiter = options.place && this.queued.of(options.place);
    if (!waiter) return super.waitForChange(key, answer, options);
    // Only a waiter needs it; one that missed a release before it was active is woken once it is.
    this.subscription.startWakeChannel();
    const untilNext = waiter.nextTryInMs(answer.wake?.freeInMs ?? Infinity, this.settings.pollIntervalMs);
    return waiter.wait(Math.min(untilNext, options.timeoutMs), options.signal);
  }

  /** The acquire ended without a lock: its entry goes at once (it would lapse anyway), naming the next waiter. */
  async leaveQueue(key: string, place: QueuePlace, call: CallContext): Promise<void> {
    if (this.modePlaces.delete(place.id)) return leaveModeLine(this.nodes, this.names.of(key), place.id, call);
    // No waiter: its attempts never queued it (a semaphore's), or its grant removed the entry.
    const waiter = this.queued.of(place);
    if (!waiter) return;
    try {
      await leaveQueue(this.nodes, this.names.of(key), waiter, call);
    } finally {
      this.queued.remove(waiter);
    }
  }

  async tryGrantSlot(request: SlotRequest, call: CallContext): Promise<GrantOutcome<WakeHint>> {
    const attempt = this.wakeUps.attemptStarted(request.key);
    let outcome: Awaited<ReturnType<typeof takeSlot>> | undefined;
    try {
      outcome = await takeSlot(this.nodes, this.names.of(request.key), request, call, this.forced);
    } finally {
      this.wakeUps.attemptEnded(request.key, outcome instanceof RedisSlot);
    }
    if (!(outcome instanceof RedisSlot)) return busy({ ...attempt, freeInMs: outcome.freeInMs });
    // Its holder hears of a forced release of the key through the provider's one subscription.
    this.subscription.start();
    return granted(outcome);
  }

  /** Read-write locks (mode-scripts.ts): a hash of holders at the lock key and a line where readers never pass a writer. */
  async tryGrantMode(request: ModeRequest, call: CallContext): Promise<GrantOutcome<WakeHint>> {
    const attempt = this.wakeUps.attemptStarted(request.key);
    let outcome: Awaited<ReturnType<typeof takeMode>> | undefined;
    try {
      outcome = await takeMode(this.nodes, this.names.of(request.key), request, call);
    } finally {
      this.wakeUps.attemptEnded(request.key, outcome instanceof RedisModeGrant);
    }
    if (outcome instanceof RedisModeGrant) {
      // The grant script took the place out of the line.
      if (request.place) this.modePlaces.delete(request.place.id);
      return granted(outcome);
    }
    if (request.place) this.modePlaces.add(request.place.id);
    return busy({ ...attempt, freeInMs: outcome.freeInMs });
  }

  modeHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return modeHolders(this.nodes, this.names.of(key), key, call);
  }

  slotHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return slotHolders(this.nodes, this.names.of(key), key, call);
  }

  override async abandon(request: GrantRequest, call: CallContext): Promise<void> {
    if (isModeRequest(request)) {
      await releaseMode(this.nodes, this.names.of(request.key), request.lockId, call);
      return;
    }
    if (!isSlotRequest(request)) return super.abandon(request, call);
    await releaseSlot(this.nodes, this.names.of(request.key), request.lockId, call);
  }

  /** Core ended the queued waits before closing: their entries' removals are answered before QUIT. */
  override async close(call: CallContext): Promise<void> {
    this.forced.close();
    await untilAborted(this.queued.drained(), call, 'close').catch(() => undefined);
    await super.close(call);
  }
}
