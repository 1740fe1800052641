import type { Capabilities, LockInfo } from '@holdfast/core';
import {
  type Busy,
  busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  granted,
  isModeRequest,
  isSlotRequest,
  type LockBackend,
  type ModeRequest,
  type SlotRequest,
  type WaitOptions,
} from '@holdfast/core/backend';
import type { MongoClient, ObjectId } from 'mongodb';
import { allowManyListeners, bounded } from './bounded.js';
import { mongoCapabilities, mongodCapabilities } from './capabilities.js';
import { type Connected, connect } from './connection.js';
import { LOCKED } from './documents.js';
import { type ChainTiming, HolderLists, KeyHasSlots, readWriteUse, semaphoreUse } from './ferretdb/index.js';
import { acquisitionFor, grantPass, type MongoWake, type PassOutcome } from './grant-pass.js';
import { LiveGrants } from './live-grants.js';
import type { Acquisition } from './lock-catalog.js';
import { MongoGrant } from './mongo-grant.js';
import type { DistLockSettings } from './options.js';
import { readServerStatus, type ServerInfoReader } from './server-info.js';
import { UnlockQueue } from './unlock-queue.js';

export interface MongoBackendOptions {
  readonly client: MongoClient;
  /** Close the client on close() (true when the adapter created it). */
  readonly ownsClient: boolean;
  readonly databaseName: string | undefined;
  readonly settings: DistLockSettings;
  readonly processId: string;
  /** Bounds the adapter's own background commands (ping, holder check, queued unlocks). */
  readonly commandTimeoutMs: number;
  /** How contenders read the server's clock (tests skew it); default serverStatus. */
  readonly readServerInfo?: ServerInfoReader;
  /** FerretDB's act window and prune delay (tests shorten them); default CHAIN_TIMING. */
  readonly chainTiming?: ChainTiming;
}

/** MongoDB's ReplSetDistLockManager as a Holdfast LockBackend: one instance = one distlock process. */
export class MongoBackend implements LockBackend<MongoWake> {
  readonly name = 'mongodb';
  /** Until the server is known (the first connection), what FerretDB and mongod share. */
  private readonly anyServer: Capabilities;
  private readonly onMongod: Capabilities;
  private readonly live = new LiveGrants();
  private readonly unlocks = new UnlockQueue();
  /** The ts of every grant pass still running: a document carrying one of them is not an orphan. */
  private readonly grabbing = new Set<string>();
  private connecting: Promise<Connected> | undefined;
  /** Set once connect() has finished. */
  private ready: Connected | undefined;
  private closed = false;
  /**
   * Semaphores and read-write locks, FerretDB only; on mongod each call fails with the
   * UnsupportedError of `capabilities.noSemaphores` or `capabilities.noReadWrite`.
   */
  private readonly holderLists: HolderLists;

  constructor(private readonly options: MongoBackendOptions) {
    this.anyServer = mongoCapabilities(options.settings);
    this.onMongod = mongodCapabilities(this.anyServer);
    this.holderLists = new HolderLists(options.readServerInfo ?? readServerStatus, (key, ts) => this.unlockSoon(key, ts));
  }

  /**
   * On mongod, `noSemaphores` and `noReadWrite` from the moment the first connection found it
   * (buildInfo), so that a semaphore or a read-write lock is refused before anything is sent from
   * then on. Before that nothing can tell: the provider does not connect when it is created, and a
   * call of either on mongod fails with the same UnsupportedError when it connects.
   */
  get capabilities(): Capabilities {
    return this.ready && !HolderLists.supportedBy(this.ready.catalog) ? this.onMongod : this.anyServer;
  }

  /** MongoDB's distlock process id of this instance: `<host>:<port>:<epoch seconds>:<random>`. */
  get processId(): string {
    return this.options.processId;
  }

  /** Unlocks not yet confirmed by the server, which the pinger keeps retrying. */
  get pendingUnlocks(): number {
    return this.unlocks.size;
  }

  /**
   * One pass of lockWithSessionID. It settles only once no write of it can still land, so that
   * when core has stopped waiting for it, abandon(request) runs after everything it did.
   */
  async tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<MongoWake>> {
    const parts = await bounded(call, this.connected());
    return this.pass(request, parts, call, async (acquisition) => {
      try {
        return await grantPass({ ...parts, unlockSoon: (key, ts) => this.unlockSoon(key, ts) }, acquisition, call);
      } catch (error) {
        if (!(error instanceof KeyHasSlots)) throw error;
        return { busy: await this.holderLists.expireOrConflict(error.state, parts, call) };
      }
    });
  }

  /**
   * One attempt at a semaphore slot (FerretDB: version records, see ferretdb/slot-catalog.ts). On mongod the
   * lock documents are changed in place by findAndModify and have no version records for slots.
   */
  async tryGrantSlot(request: SlotRequest, call: CallContext): Promise<GrantOutcome<MongoWake>> {
    const parts = await bounded(call, this.connected());
    return this.pass(request, parts, call, this.holderLists.passFor(parts, semaphoreUse(request.limit), call));
  }

  async slotHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    const parts = await bounded(call, this.connected());
    // Reads only, each with the call's signal: core stops waiting at the bound, nothing to add here.
    return this.holderLists.slotHolders(parts, key, call);
  }

  /**
   * One attempt at a read-write grant (FerretDB): the key's holder list with a mode per holder, taken
   * like a slot (ferretdb/key-use.ts); its grants are extended, checked and freed as slots are.
   */
  async tryGrantMode(request: ModeRequest, call: CallContext): Promise<GrantOutcome<MongoWake>> {
    const parts = await bounded(call, this.connected());
    return this.pass(request, parts, call, this.holderLists.passFor(parts, readWriteUse(request.mode), call));
  }

  async modeHolders(key: string, call: CallContext): Promise<readonly LockInfo[]> {
    const parts = await bounded(call, this.connected());
    // Reads only, each with the call's signal, as slotHolders.
    return this.holderLists.modeHolders(parts, key, call);
  }

  /** A grant pass (a lock's, a slot's or a read-write grant's) and what follows it: the late-reply checks, then a live grant. */
  private async pass(
    request: GrantRequest,
    parts: Connected,
    call: CallContext,
    run: (acquisition: Acquisition) => Promise<PassOutcome>,
  ): Promise<GrantOutcome<MongoWake>> {
    const acquisition = acquisitionFor(request, this.processId);
    const sentAt = Date.now();
    const id = acquisition.ts.toHexString();
    // Claimed from before the first write until the grant is live (or the pass ends), so never an orphan.
    this.grabbing.add(id);
    try {
      const outcome = await run(acquisition);
      // Core no longer waits for this pass: its abandon(request) frees the grant, by lockId.
      call.signal.throwIfAborted();
      if ('busy' in outcome) return busy(outcome.busy);
      if (request.autoRenew && parts.pinger.outlivedPings(sentAt, request.ttlMs)) {
        // The reply came so late that this process's pings may have lapsed meanwhile: a contender may
        // hold the lock now. Free it instead of handing it out.
        this.unlockSoon(request.key, acquisition.ts);
        return busy();
      }
      parts.expiry.forget(request.key);
      parts.wakeUps.granted(request.key);
      const host = { catalog: parts.catalog, live: this.live, unlockSoon: (key: string, ts: ObjectId) => this.unlockSoon(key, ts) };
      const grant = new MongoGrant(host, request, acquisition.ts, outcome.granted, sentAt);
      this.live.add(grant);
      return granted(grant);
    } finally {
      this.grabbing.delete(id);
    }
  }

  async waitForChange(key: string, wake: Busy<MongoWake>, options: WaitOptions): Promise<void> {
    const { wakeUps } = await bounded(options, this.connected());
    await wakeUps.wait(key, wake, options);
  }

  /** Frees the key if the lock document (or a slot, or a read-write grant) still carries this request's lockId (its grant landed unseen). */
  async abandon(request: GrantRequest, call: CallContext): Promise<void> {
    const parts = await bounded(call, this.connected());
    if (isSlotRequest(request) || isModeRequest(request)) return bounded(call, this.holderLists.abandon(parts, request, call));
    const { catalog } = parts;
    const current = await bounded(call, catalog.getLockByName(request.key, call));
    if (current?.state !== LOCKED || current.lockId !== request.lockId) return;
    try {
      await bounded(call, catalog.unlock({ key: request.key, ts: current.ts, granted: current }, call));
    } catch (error) {
      this.unlockSoon(request.key, current.ts);
      throw error;
    }
  }

  /** Reads only, each with the call's signal (see bounded.ts): only the shared connect needs bounding here. */
  async inspect(key: string, call: CallContext): Promise<LockInfo | null> {
    const { inspection } = await bounded(call, this.connected());
    return inspection.inspect(key, call);
  }

  async list(prefix: string, call: CallContext): Promise<readonly LockInfo[]> {
    const { inspection } = await bounded(call, this.connected());
    return inspection.list(prefix, call);
  }

  async forceRelease(key: string, call: CallContext): Promise<boolean> {
    const { catalog } = await bounded(call, this.connected());
    const freed = await bounded(call, catalog.forceUnlock(key, call));
    this.live.loseWhere((grant) => grant.key === key, 'force-released by an administrator');
    return freed;
  }

  /**
   * Stops the pinger, frees what this process still holds and removes its ping, then closes the
   * client. When `call.signal` aborts (close ran out of time) the client is closed at once, which
   * ends every connection and every command still waiting for the server.
   */
  async close(call: CallContext): Promise<void> {
    this.closed = true;
    try {
      await bounded(call, this.shutdown(call));
    } catch {
      // Out of time, or the server failed: nothing more to do but close the connections.
    } finally {
      // The driver's close waits for the server in places (ending sessions): never longer than the signal allows.
      if (this.options.ownsClient) await bounded(call, this.options.client.close()).catch(() => undefined);
    }
  }

  private async shutdown(call: CallContext): Promise<void> {
    allowManyListeners(call);
    // Still connecting: nothing was taken yet, and connect() gives up by itself once it sees `closed`.
    const connected = this.ready;
    if (!connected) return;
    await connected.pinger.stop(call);
    await connected.wakeUps.close(call);
    await this.unlocks.drain(connected.catalog, call).catch(() => undefined);
    await connected.catalog.unlockAll(call).catch(() => undefined);
    await connected.pings.stopPing(call).catch(() => undefined);
  }

  private connected(): Promise<Connected> {
    this.connecting ??= connect({
      ...this.options,
      readServerInfo: this.options.readServerInfo ?? readServerStatus,
      grants: this.live,
      unlocks: this.unlocks,
      claims: (ts) => this.grabbing.has(ts.toHexString()) || this.live.holds(ts),
      isClosed: () => this.closed,
    }).then(
      (connected) => (this.ready = connected),
      (error: unknown) => {
        this.connecting = undefined;
        throw error;
      },
    );
    return this.connecting;
  }

  /** Queues an unlock by ts and has the pinger drain the queue now rather than at its next interval. */
  private unlockSoon(key: string, ts: ObjectId): void {
    this.unlocks.add(key, ts);
    void this.connecting?.then(
      ({ pinger }) => pinger.kick(),
      () => undefined,
    );
  }
}
