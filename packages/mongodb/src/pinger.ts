import type { DistLockCatalog } from './catalog.js';
import type { HeldGrants } from './held-grants.js';
import type { UnlockQueue } from './unlock-queue.js';

/**
 * One per provider instance, however many locks it holds (MongoDB's replSetDistLockPinger). Every
 * interval: ping, drain the unlock queue, check this process's locks on the server. Between rounds
 * it watches its own pings: a lock kept alive by them is declared lost once they have failed for
 * longer than its lease minus a safety margin, before any contender may judge it expired.
 */
export class Pinger {
  private timer: NodeJS.Timeout | undefined;
  private pinging: Promise<void> | undefined;
  private maintaining: Promise<void> | undefined;
  private maintainedAt = 0;
  private stopped = false;
  private lastPingError: unknown;

  constructor(
    private readonly catalog: DistLockCatalog,
    private readonly intervalMs: number,
    private readonly grants: HeldGrants,
    private readonly unlocks: UnlockQueue,
    /** Local time at which the last successful ping was sent. */
    public lastPingSentAt: number,
  ) {}

  start(): void {
    this.schedule();
  }

  /** Stops the timer and waits for the work in flight; leaves nothing scheduled. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await Promise.all([this.pinging, this.maintaining]);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => this.tick(), this.intervalMs);
  }

  /** The ping and the rest run separately, so a slow holder check never delays a ping. */
  private tick(): void {
    this.timer = undefined;
    this.loseLocksOutlivingPings();
    this.pinging ??= this.ping().finally(() => (this.pinging = undefined));
    // A slow check (FerretDB scans every lock document for it) is followed by a full idle interval.
    if (!this.maintaining && Date.now() - this.maintainedAt >= this.intervalMs) {
      this.maintaining = this.maintain().finally(() => {
        this.maintaining = undefined;
        this.maintainedAt = Date.now();
      });
    }
    this.schedule();
  }

  private async ping(): Promise<void> {
    const sentAt = Date.now();
    try {
      await this.catalog.ping();
      this.lastPingSentAt = sentAt;
      this.lastPingError = undefined;
    } catch (error) {
      this.lastPingError = error;
    }
  }

  /** Drains the unlock queue, then checks this process's locks on the server. */
  private async maintain(): Promise<void> {
    await this.unlocks.drain(this.catalog);
    const listedAt = Date.now();
    try {
      this.grants.verify(await this.catalog.heldByProcess(), listedAt);
    } catch {
      // The server is unreachable: the ping deadline, not this check, decides about loss then.
    }
  }

  private loseLocksOutlivingPings(): void {
    const now = Date.now();
    const lost = this.grants.loseWhere(
      (grant) => grant.request.autoRenew && now >= Math.max(this.lastPingSentAt, grant.sentAt) + grant.lease - this.safetyMargin(grant.lease),
      'this process could not ping for longer than the lease allows; a contender may take the lock over',
      this.lastPingError,
    );
    // The document may still carry our ts: free it as soon as the server answers again.
    for (const grant of lost) this.unlocks.add(grant.request.key, grant.ts);
  }

  /** A tenth of the lease, plus one interval because deadlines are only checked once per interval. */
  private safetyMargin(lease: number): number {
    return lease / 10 + this.intervalMs;
  }
}
