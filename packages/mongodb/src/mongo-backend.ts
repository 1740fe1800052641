import { MongoServerSelectionError, ObjectId, type Db, type MongoClient } from 'mongodb';
import type { Capabilities, LockInfo } from '@holdfast/core';
import type { Grant, GrantRequest, LockBackend, WaitOptions } from '@holdfast/core/backend';
import { type Acquisition, DistLockCatalog } from './catalog.js';
import { LOCKED, UNLOCKED, type LockDocument } from './documents.js';
import { isNetworkError } from './driver-errors.js';
import { PingHistory } from './expiry.js';
import { HeldGrants } from './held-grants.js';
import type { DistLockSettings } from './options.js';
import { Pinger } from './pinger.js';
import { readServerStatus, type ServerInfoReader } from './server-info.js';
import { UnlockQueue } from './unlock-queue.js';
import { WakeUps } from './wake-ups.js';

/** Immediate retries of a grab after a network error (lockWithSessionID's kMaxNumLockAcquireRetries). */
const NETWORK_RETRIES = 2;

export interface MongoBackendOptions {
  readonly client: MongoClient;
  /** Close the client on close() (true when the adapter created it). */
  readonly ownsClient: boolean;
  readonly databaseName: string | undefined;
  readonly settings: DistLockSettings;
  readonly processId: string;
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
    expiryGraceMs: settings.lockExpirationMs + 2 * settings.retryIntervalMs + settings.pingIntervalMs,
    renewal: 'backend',
  });
}

/** The runtime parts, created once the server has answered. */
interface Connected {
  readonly db: Db;
  readonly catalog: DistLockCatalog;
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
  private readonly readServerInfo: ServerInfoReader;
  private connecting: Promise<Connected> | undefined;
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

  async tryGrant(request: GrantRequest): Promise<Grant | null> {
    const { catalog } = await this.connected();
    const acquisition = this.acquisitionFor(request);
    const sentAt = Date.now();
    let granted = await this.grab(catalog, request, acquisition);
    if (!granted) {
      const current = await catalog.getLockByName(request.key);
      if (current && (current.state === UNLOCKED || current.ts.equals(acquisition.ts) || (await this.isExpired(current)))) {
        granted = await this.unlessUnknown(request, acquisition, () => catalog.overtakeLock(acquisition, current.ts));
      }
    }
    if (!granted) return null;
    this.history.forget(request.key);
    this.sessionIds.delete(request);
    this.grants.add({ request, ts: acquisition.ts, sentAt, grantedAt: Date.now(), lease: request.ttlMs });
    return {
      token: BigInt(granted.fence ?? 0),
      acquiredAt: granted.when,
      expiresAt: request.autoRenew ? null : new Date(sentAt + request.ttlMs),
    };
  }

  async waitForChange(key: string, options: WaitOptions): Promise<void> {
    const { wakeUps } = await this.connected();
    await wakeUps.wait(key, options);
  }

  async extend(key: string, lockId: string, ttlMs: number): Promise<Date | null | undefined> {
    const grant = this.grants.get(lockId);
    if (!grant) return undefined;
    const { catalog } = await this.connected();
    const started = Date.now();
    if (!(await catalog.extend(key, grant.ts, ttlMs))) {
      this.grants.remove(lockId);
      return undefined;
    }
    grant.lease = ttlMs;
    return grant.request.autoRenew ? null : new Date(started + ttlMs);
  }

  async release(key: string, lockId: string): Promise<boolean> {
    const grant = this.grants.remove(lockId);
    if (!grant) return false;
    const { catalog } = await this.connected();
    try {
      return await catalog.unlock(key, grant.ts);
    } catch (error) {
      this.unlockQueue.add(key, grant.ts);
      throw error;
    }
  }

  async isHeld(key: string, lockId: string): Promise<boolean> {
    const grant = this.grants.get(lockId);
    if (!grant) return false;
    const { catalog } = await this.connected();
    const current = await catalog.getLockByName(key);
    return current?.state === LOCKED && current.ts.equals(grant.ts);
  }

  async inspect(key: string): Promise<LockInfo | null> {
    const { catalog } = await this.connected();
    const current = await catalog.getLockByName(key);
    if (!current || current.state !== LOCKED) return null;
    const lastPing = await catalog.getPing(current.process);
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

  async forceRelease(key: string): Promise<boolean> {
    const { catalog } = await this.connected();
    const freed = await catalog.forceUnlock(key);
    this.grants.loseWhere((grant) => grant.request.key === key, 'force-released by an administrator');
    return freed;
  }

  async close(): Promise<void> {
    this.closed = true;
    const connected = await this.connecting?.catch(() => undefined);
    try {
      if (connected) {
        await connected.pinger.stop();
        await connected.wakeUps.close();
        await this.unlockQueue.drain(connected.catalog).catch(() => undefined);
        await connected.catalog.unlockAll().catch(() => undefined);
        await connected.catalog.stopPing().catch(() => undefined);
      }
    } finally {
      if (this.options.ownsClient) await this.options.client.close();
    }
  }

  private async connect(): Promise<Connected> {
    if (this.closed) throw new Error('closed');
    const { client, settings, processId } = this.options;
    await client.connect();
    const db = client.db(this.options.databaseName);
    const buildInfo = await db.command({ buildInfo: 1 });
    const ferretdb = typeof buildInfo['ferretdbVersion'] === 'string';
    const catalog = new DistLockCatalog(db, settings, processId, ferretdb);
    await catalog.ensureIndexes();
    const pingSentAt = Date.now();
    await catalog.ping();
    const pinger = new Pinger(catalog, settings.pingIntervalMs, this.grants, this.unlockQueue, pingSentAt);
    const connected = { db, catalog, pinger, wakeUps: new WakeUps(catalog.locks, settings.retryIntervalMs), ferretdb };
    if (this.closed) {
      await catalog.stopPing().catch(() => undefined);
      throw new Error('closed');
    }
    pinger.start();
    return connected;
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
  private async grab(catalog: DistLockCatalog, request: GrantRequest, acquisition: Acquisition): Promise<LockDocument | null> {
    for (let retry = 0; ; retry++) {
      try {
        return await catalog.grabLock(acquisition);
      } catch (error) {
        if (!isNetworkError(error) || retry >= NETWORK_RETRIES) return this.unknownState(request, acquisition, error);
        try {
          await catalog.unlock(acquisition.key, acquisition.ts);
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
    if (!(error instanceof MongoServerSelectionError)) this.abandonSession(request, acquisition);
    throw error;
  }

  /** Queues an unlock of this ts and gives the attempt a new one, so the queued unlock never frees a later grant. */
  private abandonSession(request: GrantRequest, acquisition: Acquisition): void {
    this.unlockQueue.add(acquisition.key, acquisition.ts);
    this.sessionIds.delete(request);
  }

  /** isLockExpired: the holder's ping (unless its lock is not renewed by pings) and the server's clock. */
  private async isExpired(current: LockDocument): Promise<boolean> {
    const { catalog, db } = await this.connected();
    const renew = current.renew !== false;
    const ping = renew ? ((await catalog.getPing(current.process)) ?? new Date(0)) : null;
    const started = performance.now();
    const server = await this.readServerInfo(db);
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
