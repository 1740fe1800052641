import { safetyDeadline } from '@holdfast/core/backend';
import type { ObjectId } from 'mongodb';
import type { Bound } from './bounded.js';
import type { LiveGrants } from './live-grants.js';
import type { LockCatalog } from './lock-catalog.js';
import type { PingStore } from './ping-store.js';
import type { UnlockQueue } from './unlock-queue.js';

/**
 * How often the catalog's housekeeping runs (FerretDB: deleting superseded version records, which
 * every read there scans): far more often than a ping, at no cost while nothing is due.
 */
const HOUSEKEEPING_MS = 1_000;

export interface PingerParts {
  readonly catalog: LockCatalog;
  readonly pings: PingStore;
  readonly grants: LiveGrants;
  readonly unlocks: UnlockQueue;
  /** True for a ts this process holds or is still trying to grab: anything else of ours is an orphan. */
  readonly claims: (ts: ObjectId) => boolean;
  readonly intervalMs: number;
  /** Longest time one of the pinger's commands may take. */
  readonly commandTimeoutMs: number;
}

/**
 * One per provider instance, however many locks it holds (MongoDB's replSetDistLockPinger). Every
 * interval: ping, drain the unlock queue, check this process's locks on the server and free the ones
 * it does not claim (a grab that landed after its caller gave up: the ping must not keep it alive).
 * Every second at most: the catalog's housekeeping.
 * Between rounds it watches its own pings: a lock kept alive by them is declared lost once they have
 * failed for longer than its lease minus a safety margin, before any contender may judge it expired.
 */
export class Pinger {
  private timer: NodeJS.Timeout | undefined;
  private housekeepingTimer: NodeJS.Timeout | undefined;
  private pinging: Promise<void> | undefined;
  private maintaining: Promise<void> | undefined;
  private housekeeping: Promise<void> | undefined;
  private maintainedAt = 0;
  private readonly stopping = new AbortController();
  private lastPingError: unknown;

  constructor(
    private readonly parts: PingerParts,
    /** Local time at which the last successful ping was sent. */
    public lastPingSentAt: number,
  ) {}

  start(): void {
    this.schedule();
    this.scheduleHousekeeping();
  }

  /** Stops the timer and waits for the work in flight (cut short when `bound` aborts); leaves nothing scheduled. */
  async stop(bound: Bound): Promise<void> {
    clearTimeout(this.timer);
    clearTimeout(this.housekeepingTimer);
    this.timer = undefined;
    this.housekeepingTimer = undefined;
    const onAbort = (): void => this.stopping.abort(bound.signal?.reason);
    if (bound.signal?.aborted) onAbort();
    bound.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await Promise.all([this.pinging, this.maintaining, this.housekeeping]);
    } finally {
      bound.signal?.removeEventListener('abort', onAbort);
      if (!this.stopping.signal.aborted) this.stopping.abort();
    }
  }

  /** Runs a maintenance round now (unless one is running): drains the unlock queue without waiting an interval. */
  kick(): void {
    if (this.stopping.signal.aborted || this.maintaining) return;
    this.maintaining = this.maintain().finally(() => {
      this.maintaining = undefined;
      this.maintainedAt = Date.now();
    });
  }

  private schedule(): void {
    if (this.stopping.signal.aborted) return;
    this.timer = setTimeout(() => this.tick(), this.parts.intervalMs);
  }

  private scheduleHousekeeping(): void {
    const { catalog, intervalMs } = this.parts;
    if (!catalog.housekeeping || this.stopping.signal.aborted) return;
    this.housekeepingTimer = setTimeout(
      () => {
        this.housekeepingTimer = undefined;
        this.housekeeping = catalog.housekeeping!(this.bound())
          .catch(() => undefined)
          .finally(() => {
            this.housekeeping = undefined;
            this.scheduleHousekeeping();
          });
      },
      Math.min(HOUSEKEEPING_MS, intervalMs),
    );
  }

  private bound(): Bound {
    return { signal: AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.parts.commandTimeoutMs)]) };
  }

  /** The ping and the rest run separately, so a slow holder check never delays a ping. */
  private tick(): void {
    this.timer = undefined;
    this.loseLocksOutlivingPings();
    this.pinging ??= this.ping().finally(() => (this.pinging = undefined));
    // A slow check (FerretDB scans every lock document for it) is followed by a full idle interval.
    if (Date.now() - this.maintainedAt >= this.parts.intervalMs) this.kick();
    this.schedule();
  }

  private async ping(): Promise<void> {
    const sentAt = Date.now();
    try {
      await this.parts.pings.ping(this.bound());
      this.lastPingSentAt = sentAt;
      this.lastPingError = undefined;
    } catch (error) {
      this.lastPingError = error;
    }
  }

  /** Drains the unlock queue, checks the grants this process holds, frees the locks it does not claim. */
  private async maintain(): Promise<void> {
    const { catalog, grants, unlocks, claims } = this.parts;
    await unlocks.drain(catalog, this.bound());
    const listedAt = Date.now();
    try {
      grants.verify(await catalog.stillHeld(grants.all(), this.bound()), listedAt);
      const orphans = (await catalog.heldByProcess(this.bound())).filter((lock) => !claims(lock.ts));
      for (const orphan of orphans) unlocks.add(orphan._id, orphan.ts);
      if (orphans.length > 0) await unlocks.drain(catalog, this.bound());
    } catch {
      // The server is unreachable: the ping deadline, not this check, decides about loss then.
    }
  }

  /**
   * True when a lock kept alive by this process's pings, requested at `sentAt`, is already past the
   * point where the holder must give it up: a grant whose reply came that late is not handed out.
   * The lease counts from the last ping that succeeded; core's safety deadline, one interval early
   * because the pinger checks deadlines only once per interval.
   */
  outlivedPings(sentAt: number, lease: number, now = Date.now()): boolean {
    return now >= safetyDeadline(Math.max(this.lastPingSentAt, sentAt), lease) - this.parts.intervalMs;
  }

  private loseLocksOutlivingPings(): void {
    const now = Date.now();
    const lost = this.parts.grants.loseWhere(
      (grant) => grant.renewedByPings && this.outlivedPings(grant.sentAt, grant.lease, now),
      'this process could not ping for longer than the lease allows; a contender may take the lock over',
      this.lastPingError,
    );
    // The document may still carry our ts: free it as soon as the server answers again.
    for (const grant of lost) this.parts.unlocks.add(grant.key, grant.ts);
  }
}
