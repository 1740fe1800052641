import { setMaxListeners } from 'node:events';
import type { Capabilities, LockInfo } from '@holdfast/core';
import type {
  Busy,
  CallContext,
  GrantOutcome,
  GrantRequest,
  LockBackend,
  ModeRequest,
  QueuePlace,
  SlotRequest,
  WaitOptions,
} from '@holdfast/core/backend';
import { MAX_TTL_MS } from '@holdfast/core/backend';
import type { EtcdContext, EtcdWake } from './context.js';
import { forceRelease, inspectKey, listLocks } from './inspection.js';
import { Layout } from './layout.js';
import { tryGrantLock } from './mutex/lock.js';
import type { ResolvedOptions } from './options.js';
import { attemptWithPlace } from './places.js';
import { abandon, leaveQueue } from './queue.js';
import { tryGrantMode } from './read-write/attempt.js';
import { modeHolders } from './read-write/holders.js';
import { EtcdRpc } from './rpc.js';
import { slotHolders, tryGrantSlot } from './semaphore.js';
import { Sessions } from './sessions.js';
import { waitForChange } from './waiting.js';
import { Watcher } from './watcher.js';

/**
 * What an etcd provider offers. TTLs are whole seconds on etcd (rounded up) and at least its minimum
 * lease TTL (1.5 x the election timeout: 2 s with the defaults). A crashed holder's entry goes when
 * its lease runs out: up to a second of rounding, then the leader's expiry sweep (every 500 ms).
 */
export const ETCD_CAPABILITIES: Capabilities = Object.freeze({
  minTtlMs: 2000,
  maxTtlMs: MAX_TTL_MS,
  defaultTtlMs: 60_000,
  fencing: 'strict',
  fifo: true,
  wakeUp: 'event',
  crossProcess: true,
  expiryGraceMs: 2000,
  renewal: 'backend',
  // One FIFO line of entries per key: a reader after a waiting writer waits for it (read-write/attempt.ts).
  writerPreferred: true,
});

/** The wiring: one gRPC channel, its sessions and one watch stream, shared by every grant of the provider. */
export class EtcdBackend implements LockBackend<EtcdWake> {
  readonly name = 'etcd';
  readonly capabilities = ETCD_CAPABILITIES;
  /** A queued entry is a claim: once the oldest it holds the key (for etcdctl too). */
  readonly placesHoldKeys = true;
  private readonly ctx: EtcdContext;
  private readonly rpc: EtcdRpc;
  private readonly stopping = new AbortController();
  private readonly closing = new AbortController();

  constructor(options: ResolvedOptions) {
    setMaxListeners(0, this.stopping.signal, this.closing.signal);
    this.rpc = new EtcdRpc(options.connection);
    const background = (): AbortSignal => AbortSignal.any([this.stopping.signal, AbortSignal.timeout(options.callTimeoutMs)]);
    this.ctx = {
      rpc: this.rpc,
      layout: new Layout(options.prefix),
      sessions: new Sessions(this.rpc, background),
      watcher: new Watcher(this.rpc),
      background,
      closing: this.closing.signal,
      places: new Map(),
    };
  }

  tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<EtcdWake>> {
    return attemptWithPlace(this.ctx, request, call, () => tryGrantLock(this.ctx, request, call));
  }

  tryGrantSlot(request: SlotRequest, call: CallContext): Promise<GrantOutcome<EtcdWake>> {
    return attemptWithPlace(this.ctx, request, call, () => tryGrantSlot(this.ctx, request, call));
  }

  slotHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return slotHolders(this.ctx, key, call.signal);
  }

  tryGrantMode(request: ModeRequest, call: CallContext): Promise<GrantOutcome<EtcdWake>> {
    return attemptWithPlace(this.ctx, request, call, () => tryGrantMode(this.ctx, request, call));
  }

  modeHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return modeHolders(this.ctx, key, call.signal);
  }

  waitForChange(key: string, busy: Busy<EtcdWake>, options: WaitOptions): Promise<void> {
    return waitForChange(this.ctx, key, busy, options);
  }

  leaveQueue(key: string, place: QueuePlace, call: CallContext): Promise<void> {
    this.ctx.places.delete(place.id);
    return leaveQueue(this.ctx, key, place, call.signal);
  }

  abandon(request: GrantRequest, call: CallContext): Promise<void> {
    return abandon(this.ctx, request, call.signal);
  }

  inspect(key: string, call: CallContext): Promise<LockInfo | null> {
    return inspectKey(this.ctx, key, call.signal);
  }

  list(prefix: string, call: CallContext): Promise<readonly LockInfo[]> {
    return listLocks(this.ctx, prefix, call.signal);
  }

  forceRelease(key: string, call: CallContext): Promise<boolean> {
    return forceRelease(this.ctx, key, call.signal);
  }

  /**
   * Core released every handle first. The leases are revoked within `call.signal` (their queue
   * entries vanish with them); when it aborts, the channel is closed at once.
   */
  async close(call: CallContext): Promise<void> {
    const hardStop = (): void => {
      this.stopping.abort(call.signal.reason);
      this.rpc.close();
    };
    if (call.signal.aborted) hardStop();
    else call.signal.addEventListener('abort', hardStop, { once: true });
    this.closing.abort();
    try {
      this.ctx.watcher.close();
      await this.ctx.sessions.close(call.signal);
    } finally {
      call.signal.removeEventListener('abort', hardStop);
      this.stopping.abort();
      this.rpc.close();
    }
  }
}
