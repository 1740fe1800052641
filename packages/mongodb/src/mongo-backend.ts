import { MongoServerSelectionError, ObjectId, type Db, type MongoClient } from 'mongodb';
import type { Capabilities, LockInfo } from '@holdfast/core';
import type { CallContext, Grant, GrantRequest, LockBackend, WaitOptions } from '@holdfast/core/backend';
import { type Bound, bounded, throwIfAborted } from './bounded.js';
import { DistLockCatalog } from './catalog.js';
import { LOCKED, UNLOCKED, type LockDocument } from './documents.js';
import { isNetworkError } from './driver-errors.js';
import { PingHistory } from './expiry.js';
import { HeldGrants } from './held-grants.js';
import type { Acquisition, LockCatalog } from './lock-catalog.js';
import type { DistLockSettings } from './options.js';
import { PingStore } from './ping-store.js';
import { Pinger } from './pinger.js';
import { connectUnlessRefused } from './refused.js';
import { readServerStatus, type ServerInfoReader } from './server-info.js';
import { UnlockQueue } from './unlock-queue.js';
import { VersionedCatalog } from './versioned-catalog.js';
import { WakeUps } from './wake-ups.js';

/** Immediate retries of a grab after a network error (lockWithSessionID's kMaxNumLockAcquireRetries). */
const NETWORK_RETRIES = 2;
/** For callers of the LockBackend methods that pass no CallContext (older cores, tests). */
const UNBOUNDED: CallContext = { signal: new AbortController().signal };

export interface MongoBackendOptions {
  readonly client: MongoClient;
  /** Close the client on close() (true when the adapter created it). */
  readonly ownsClient: boolean;
  readonly databaseName: string | undefined;
  readonly settings: DistLockSettings;
  readonly processId: string;
  /** Bounds the adapter's own background commands (ping, holder check, queued unlocks). */
  readonly commandTimeoutMs: number;
  readonly readServerInfo?: ServerInfoReader;
}

export function mongoCapabilities(settings: DistLockSettings): Capabilities {
  return Object.freeze({
    minTtlMs: 3 * settings.pingIntervalMs,
    maxTtlMs: 30 * 24 * 3_600_000,
    defaultTtlMs: settings.lockExpirationMs,
    fencing: 'strict',
    fifo: false,
    wakeUp: 'change-stream-or-poll',
    crossProcess: true,
    // Two observations a lease apart; the first may come up to a lease late (a contender arriving just
    // as the lease ends), and each is up to one retry interval (and the last ping one interval) late.
    expiryGraceMs: settings.lockExpirationMs + 2 * settings.pollIntervalMs + settings.pingIntervalMs,
    renewal: 'backend',
  });
}

/** The runtime parts, created once the server has answered. */
interface Connected {
  readonly db: Db;
  readonly catalog: LockCatalog;
  readonly pings: PingStore;
  readonly pinger: Pinger;
  readonly wakeUps: WakeUps;
  readonly ferretdb: boolean;
}

/** MongoDB's ReplSetDistLockManager as a Holdfast LockBackend: one instance = one distlock process. */
export class MongoBackend implements LockBackend {
  readonly name = 'mongodb';
  readonly capabilities: Capabilities;
  readonly grants = new HeldGrants();
  readonly unlockQueue = new UnlockQueue();
  private readonly history = new PingHistory();
  /** One lock session id (ts) per acquire attempt, reused across its tryGrant passes. */
  private readonly sessionIds = new WeakMap<GrantRequest, ObjectId>();
  /** The ts of every grab pass still running (a document carrying one of them is not an orphan). */
  private readonly grabbing = new Map<string, number>();
  private readonly readServerInfo: ServerInfoReader;
  private connecting: Promise<Connected> | undefined;
  /** Set once connect() has finished. */
  private ready: Connected | undefined;
  private closed = false;

  constructor(private readonly options: MongoBackendOptions) {
    this.capabilities = mongoCapabilities(options.settings);
    this.readServerInfo = options.readServerInfo ?? readServerStatus;
  }

  get processId(): string {
    return this.options.processId;
  }

  /** The driver client (for diagnostics: command monitoring, server info). */
  get client(): MongoClient {
    return this.options.client;
  }

  /** Connects, detects the server kind, creates indexes, pings once and starts the pinger. */
  connected(): Promise<Connected> {
    this.connecting ??= this.connect().catch((error: unknown) => {
      this.connecting = undefined;
      throw error;
    });
    return this.connecting;
  }

  /**
   * One pass of lockWithSessionID. Returns when `call.signal` aborts, whatever the server does; a
   * pass abandoned that way (or whose outcome is unknown) has its ts unlocked once it has settled.
   */
  async tryGrant(request: GrantRequest, call: CallContext = UNBOUNDED): Promise<Grant | null> {
    const acquisition = this.acquisitionFor(request);
    const sentAt = Date.now();
    // Claimed from before the first write until the grant is recorded (or freed), so never an orphan.
    this.claim(acquisition.ts);
    const pass = this.grantPass(request, acquisition, call);
    let granted: LockDocument | null;
    try {
      granted = await bounded(call, pass);
      throwIfAborted(call);
    } catch (error) {
      if (call.signal.aborted) this.abandon(request, acquisition, pass);
      else this.unclaim(acquisition.ts);
      throw error;
    }
    if (granted && this.arrivedTooLate(request, sentAt)) {
      // The reply came so late that the lease may have run out meanwhile (this process's pings
      // stalled, or a lease not renewed by pings): a contender may hold it now. Free it instead.
      this.unlockSoon(request.key, acquisition.ts);
      this.sessionIds.delete(request);
      granted = null;
    }
    if (granted) {
      this.history.forget(request.key);
      this.sessionIds.delete(request);
      this.grants.add({ request, ts: acquisition.ts, granted, sentAt, grantedAt: Date.now(), lease: request.ttlMs });
    }
    this.unclaim(acquisition.ts);
    if (!granted) return null;
    return {
      token: BigInt(granted.fence ?? 0),
      acquiredAt: granted.when,
      expiresAt: request.autoRenew ? null : new Date(sentAt + request.ttlMs),
    };
  }

  async waitForChange(key: string, options: WaitOptions): Promise<void> {
    const { wakeUps } = await bounded(options, this.connected());
    await wakeUps.wait(key, options);
  }

  async extend(key: string, lockId: string, ttlMs: number, call: CallContext = UNBOUNDED): Promise<Date | null | undefined> {
    const grant = this.grants.get(lockId);
    if (!grant) return undefined;
    const { catalog } = await bounded(call, this.connected());
    const started = Date.now();
    if (!(await bounded(call, catalog.extend({ key, ts: grant.ts, granted: grant.granted }, ttlMs, call)))) {
      this.grants.remove(lockId);
      return undefined;
    }
    grant.lease = ttlMs;
    return grant.request.autoRenew ? null : new Date(started + ttlMs);
  }

  async release(key: string, lockId: string, call: CallContext = UNBOUNDED): Promise<boolean> {
    const grant = this.grants.remove(lockId);
    if (!grant) return false;
    const unlock = this.connected().then(({ catalog }) => catalog.unlock({ key, ts: grant.ts, granted: grant.granted }, call));
    try {
      return await bounded(call, unlock);
    } catch (error) {
      // Unconfirmed: retried by the pinger until the server answers (a release never leaves a lock held);
      // an unlock cut short by the signal is queued once it has settled, not while it may still land.
      if (call.signal.aborted) void unlock.catch(() => undefined).then(() => this.unlockSoon(key, grant.ts));
      else this.unlockSoon(key, grant.ts);
      throw error;
    }
  }

  async isHeld(key: string, lockId: string, call: CallContext = UNBOUNDED): Promise<boolean> {
    const grant = this.grants.get(lockId);
    if (!grant) return false;
    const { catalog } = await bounded(call, this.connected());
    const current = await bounded(call, catalog.getLockByName(key, call));
    return current?.state === LOCKED && current.ts.equals(grant.ts);
  }

  async inspect(key: string, call: CallContext = UNBOUNDED): Promise<LockInfo | null> {
    const { catalog, pings } = await bounded(call, this.connected());
    const current = await bounded(call, catalog.getLockByName(key, call));
    if (!current || current.state !== LOCKED) return null;
    const lastPing = await bounded(call, pings.getPing(current.process, call));
    const renew = current.renew !== false;
    const lease = current.lease ?? this.options.settings.lockExpirationMs;
    const owner = current.who.startsWith(`${current.process}:`) ? current.who.slice(current.process.length + 1) : current.who;
    return {
      key,
      owner,
      reason: current.why === '' ? undefined : current.why,
      acquiredAt: current.when,
      // A renewed lock lives as long as its process pings; otherwise until its lease after the last extend.
      expiresAt: renew ? null : new Date((current.extended ?? current.when).getTime() + lease),
      token: BigInt(current.fence ?? 0),
      details: {
        state: current.state,
        process: current.process,
        who: current.who,
        why: current.why,
        when: current.when.toISOString(),
        ts: current.ts.toHexString(),
        lease,
        renewedByPings: renew,
        lastPing: lastPing?.toISOString() ?? null,
      },
    };
  }

  async forceRelease(key: string, call: CallContext = UNBOUNDED): Promise<boolean> {
    const { catalog } = await bounded(call, this.connected());
    const freed = await bounded(call, catalog.forceUnlock(key, call));
    this.grants.loseWhere((grant) => grant.request.key === key, 'force-released by an administrator');
    return freed;
  }

  /**
   * Stops the pinger, frees what this process still holds and removes its ping, then closes the
   * client. When `call.signal` aborts (close ran out of time) the client is closed at once, which
   * ends every connection and every command still waiting for the server.
   */
  async close(call: CallContext = UNBOUNDED): Promise<void> {
    this.closed = true;
    const shutdown = this.shutdown(call);
    try {
      await bounded(call, shutdown);
    } catch {
      // Out of time, or the server failed: nothing more to do but close the connections.
    } finally {
      if (this.options.ownsClient) await this.closeClient(call);
    }
  }

  private async shutdown(call: CallContext): Promise<void> {
    // Still connecting: nothing was taken yet, and connect() gives up by itself once it sees `closed`.
    const connected = this.ready;
    if (!connected) return;
    await connected.pinger.stop(call);
    await connected.wakeUps.close();
    await this.unlockQueue.drain(connected.catalog, call).catch(() => undefined);
    await connected.catalog.unlockAll(call).catch(() => undefined);
    await connected.pings.stopPing(call).catch(() => undefined);
  }

  /** The driver's close waits for the server in places (ending sessions): never longer than the signal allows. */
  private async closeClient(call: CallContext): Promise<void> {
    const closing = this.options.client.close();
    await bounded(call, closing).catch(() => undefined);
  }

  private async connect(): Promise<Connected> {
    if (this.closed) throw new Error('closed');
    const { client, settings, processId } = this.options;
    const bound: Bound = { signal: AbortSignal.timeout(this.options.commandTimeoutMs) };
    await connectUnlessRefused(client);
    const db = client.db(this.options.databaseName);
    const buildInfo = await db.command({ buildInfo: 1 }, { signal: bound.signal });
    const ferretdb = typeof buildInfo['ferretdbVersion'] === 'string';
    const catalog = ferretdb ? new VersionedCatalog(db, settings.locksCollection, processId) : new DistLockCatalog(db, settings.locksCollection, processId);
    const pings = new PingStore(db, settings.pingsCollection, processId);
    await catalog.ensureIndexes(bound);
    await pings.ensureIndexes(bound);
    const pingSentAt = Date.now();
    await pings.ping(bound);
    const pinger = new Pinger(
      {
        catalog,
        pings,
        grants: this.grants,
        unlocks: this.unlockQueue,
        claims: (ts) => this.grabbing.has(ts.toHexString()) || this.grants.holds(ts),
        intervalMs: settings.pingIntervalMs,
        commandTimeoutMs: this.options.commandTimeoutMs,
      },
      pingSentAt,
    );
    const connected = { db, catalog, pings, pinger, wakeUps: new WakeUps(catalog.locks, settings.pollIntervalMs), ferretdb };
    if (this.closed) {
      await pings.stopPing(bound).catch(() => undefined);
      throw new Error('closed');
    }
    pinger.start();
    this.ready = connected;
    return connected;
  }

  private async grantPass(request: GrantRequest, acquisition: Acquisition, call: CallContext): Promise<LockDocument | null> {
    const { catalog } = await this.connected();
    let granted = await this.grab(catalog, request, acquisition, call);
    if (!granted) {
      const current = await catalog.getLockByName(request.key, call);
      if (current && (current.state === UNLOCKED || current.ts.equals(acquisition.ts) || (await this.isExpired(current, call)))) {
        granted = await this.unlessUnknown(request, acquisition, () => catalog.overtakeLock(acquisition, current.ts, call));
      }
    }
    return granted;
  }

  private arrivedTooLate(request: GrantRequest, sentAt: number): boolean {
    if (!request.autoRenew) return Date.now() >= sentAt + request.ttlMs;
    return this.ready?.pinger.outlivedPings(sentAt, request.ttlMs) ?? false;
  }

  private claim(ts: ObjectId): void {
    const id = ts.toHexString();
    this.grabbing.set(id, (this.grabbing.get(id) ?? 0) + 1);
  }

  private unclaim(ts: ObjectId): void {
    const id = ts.toHexString();
    const left = (this.grabbing.get(id) ?? 1) - 1;
    if (left === 0) this.grabbing.delete(id);
    else this.grabbing.set(id, left);
  }

  private acquisitionFor(request: GrantRequest): Acquisition {
    let ts = this.sessionIds.get(request);
    if (!ts) this.sessionIds.set(request, (ts = new ObjectId()));
    return {
      key: request.key,
      ts,
      who: `${this.processId}:${request.owner}`,
      why: request.reason ?? '',
      lease: request.ttlMs,
      renew: request.autoRenew,
    };
  }

  /** grabLock with lockWithSessionID's error rules: network error = unlock and retry at once, at most twice. */
  private async grab(catalog: LockCatalog, request: GrantRequest, acquisition: Acquisition, call: CallContext): Promise<LockDocument | null> {
    for (let retry = 0; ; retry++) {
      try {
        return await catalog.grabLock(acquisition, call);
      } catch (error) {
        if (!isNetworkError(error) || retry >= NETWORK_RETRIES || call.signal.aborted) return this.unknownState(request, acquisition, error);
        try {
          await catalog.unlock(acquisition, call);
        } catch (unlockError) {
          return this.unknownState(request, acquisition, unlockError);
        }
      }
    }
  }

  private async unlessUnknown(
    request: GrantRequest,
    acquisition: Acquisition,
    command: () => Promise<LockDocument | null>,
  ): Promise<LockDocument | null> {
    try {
      return await command();
    } catch (error) {
      return this.unknownState(request, acquisition, error);
    }
  }

  /** The command may have taken the lock: queue an unlock of this session and fail the attempt. */
  private unknownState(request: GrantRequest, acquisition: Acquisition, error: unknown): never {
    // Nothing reached the server when no server could be selected: the state is known, unchanged.
    if (!(error instanceof MongoServerSelectionError)) {
      this.unlockSoon(acquisition.key, acquisition.ts);
      this.sessionIds.delete(request);
    }
    throw error;
  }

  /**
   * The caller gave up on this pass: the attempt gets a new ts (so no later grant can be freed by
   * this unlock), and this one is unlocked once the pass has settled, when no write of it is pending.
   */
  private abandon(request: GrantRequest, acquisition: Acquisition, pass: Promise<unknown>): void {
    this.sessionIds.delete(request);
    const free = (): void => {
      this.unclaim(acquisition.ts);
      this.unlockSoon(acquisition.key, acquisition.ts);
    };
    void pass.then(free, free);
  }

  /** Queues an unlock by ts and has the pinger drain the queue now rather than at its next interval. */
  private unlockSoon(key: string, ts: ObjectId): void {
    this.unlockQueue.add(key, ts);
    void this.connecting?.then(({ pinger }) => pinger.kick(), () => undefined);
  }

  /** isLockExpired: the holder's ping (unless its lock is not renewed by pings) and the server's clock. */
  private async isExpired(current: LockDocument, call: CallContext): Promise<boolean> {
    const { pings, db } = await this.connected();
    const renew = current.renew !== false;
    const ping = renew ? ((await pings.getPing(current.process, call)) ?? new Date(0)) : null;
    const started = performance.now();
    const server = await this.readServerInfo(db, call.signal);
    const roundTripMs = performance.now() - started;
    const observation = {
      process: current.process,
      ping,
      ts: current.ts,
      extended: current.extended ?? null,
      lease: current.lease ?? this.options.settings.lockExpirationMs,
    };
    return this.history.isExpired(current._id, observation, server, roundTripMs);
  }
}
