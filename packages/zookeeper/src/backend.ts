import type { Capabilities, LockInfo } from '@holdfast/core';
import {
  type Busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  type LockBackend,
  MAX_TTL_MS,
  type ModeRequest,
  type QueuePlace,
  type SlotRequest,
  type WaitOptions,
} from '@holdfast/core/backend';
import { contend, type ZkWake } from './contend.js';
import { forceRelease, holdersInfo, inspectKey, listLocks } from './inspection.js';
import { decodeData, readLine } from './line.js';
import { LOCK_KIND, READ_KIND, slotKind, WRITE_KIND } from './node-names.js';
import type { ResolvedOptions } from './options.js';
import { ZkSession } from './session.js';
import { ZkSpace } from './space.js';
import { Watches } from './watches.js';
import { ZkCalls } from './zk-calls.js';

/**
 * A crashed holder's lock is freed when its session expires: `sessionTimeoutMs` after the last
 * heartbeat the server heard, rounded up to the server's next tick (2 s by default).
 */
const SERVER_TICK_MS = 2000;

/** What a ZooKeeper provider offers; `minTtlMs` follows `sessionTimeoutMs` (shown for the default 10 s). */
export function zookeeperCapabilities(sessionTimeoutMs: number): Capabilities {
  return Object.freeze({
    // A lock cannot promise to outlive a crash by less than the session timeout.
    minTtlMs: sessionTimeoutMs,
    maxTtlMs: MAX_TTL_MS,
    defaultTtlMs: Math.max(30_000, sessionTimeoutMs),
    fencing: 'strict',
    fifo: true,
    wakeUp: 'event',
    crossProcess: true,
    expiryGraceMs: SERVER_TICK_MS,
    renewal: 'backend',
    // One line per key, FIFO by sequence: a reader after a waiting writer waits for it (contend.ts).
    writerPreferred: true,
  });
}

export const ZOOKEEPER_CAPABILITIES: Capabilities = zookeeperCapabilities(10_000);

/** The wiring: one session per provider, its calls and watches, and Curator's recipe on top. */
export class ZookeeperBackend implements LockBackend<ZkWake> {
  readonly name = 'zookeeper';
  readonly capabilities: Capabilities;
  /** A contender's node is a claim: once the smallest it holds the key. */
  readonly placesHoldKeys = true;
  private readonly session: ZkSession;
  private readonly space: ZkSpace;
  private readonly stopping = new AbortController();

  constructor(options: ResolvedOptions) {
    this.capabilities = zookeeperCapabilities(options.sessionTimeoutMs);
    this.session = new ZkSession(options);
    const calls = new ZkCalls(
      () => this.session.client(),
      (signal) => this.session.ready(signal),
    );
    const watches = new Watches(calls, this.session);
    this.session.onLoss(() => watches.wakeAll());
    const background = (): AbortSignal => AbortSignal.any([this.stopping.signal, AbortSignal.timeout(options.callTimeoutMs)]);
    this.space = new ZkSpace(calls, this.session, watches, options.root, background);
  }

  tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<ZkWake>> {
    return contend(this.space, request, LOCK_KIND, call);
  }

  tryGrantSlot(request: SlotRequest, call: CallContext): Promise<GrantOutcome<ZkWake>> {
    return contend(this.space, request, slotKind(request.limit), call);
  }

  slotHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return holdersInfo(this.space, key, 'slots', call.signal);
  }

  /** Curator's InterProcessReadWriteLock: `__READ__` and `__WRIT__` contenders in one line. */
  tryGrantMode(request: ModeRequest, call: CallContext): Promise<GrantOutcome<ZkWake>> {
    return contend(this.space, request, request.mode === 'shared' ? READ_KIND : WRITE_KIND, call);
  }

  modeHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return holdersInfo(this.space, key, 'read-write', call.signal);
  }

  /** A place waits for its predecessor's node to go (a reader: the last writer before it); a semaphore waiter or an observer, for the key's children to change. */
  async waitForChange(key: string, last: Busy<ZkWake>, options: WaitOptions): Promise<void> {
    const { signal, timeoutMs } = options;
    const { watches } = this.space;
    const wake = last.wake;
    if (wake?.predecessor) return watches.untilGone(wake.predecessor, signal, timeoutMs);
    return watches.untilChildrenChange(wake?.children ?? this.space.keyPath(key), signal, timeoutMs);
  }

  /** The place's node goes, so the one behind it is woken by its watch. */
  async leaveQueue(key: string, place: QueuePlace, call: CallContext): Promise<void> {
    const dir = this.space.keyPath(key);
    const mine = (await readLine(this.space.calls, dir, call.signal)).find((c) => c.id === place.id);
    if (mine) await this.space.calls.remove(`${dir}/${mine.name}`, -1, call.signal);
  }

  /** The attempt's node, found by the id in its name, is deleted if this attempt wrote it last (version-checked). */
  async abandon(request: GrantRequest, call: CallContext): Promise<void> {
    const dir = this.space.keyPath(request.key);
    const id = request.place?.id ?? request.lockId;
    const mine = (await readLine(this.space.calls, dir, call.signal)).find((c) => c.id === id);
    if (!mine) return;
    const path = `${dir}/${mine.name}`;
    const node = await this.space.calls.data(path, call.signal);
    if (node && decodeData(node.data)?.lockId === request.lockId) await this.space.calls.remove(path, node.stat.version, call.signal);
  }

  inspect(key: string, call: CallContext): Promise<LockInfo | null> {
    return inspectKey(this.space, key, call.signal);
  }

  list(prefix: string, call: CallContext): Promise<readonly LockInfo[]> {
    return listLocks(this.space, prefix, call.signal);
  }

  forceRelease(key: string, call: CallContext): Promise<boolean> {
    return forceRelease(this.space, key, call.signal);
  }

  /** Ends the session (every node of this provider goes at once); when `call.signal` aborts, the socket goes at once. */
  async close(call: CallContext): Promise<void> {
    this.space.watches.wakeAll();
    try {
      await this.session.close(call.signal);
    } finally {
      this.stopping.abort();
    }
  }
}
