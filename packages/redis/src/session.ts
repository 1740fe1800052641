import type { Redis } from 'ioredis';
import { SweepClock } from './sweep-clock.js';

/** Something whose standing depends on what the server did on a session: a grant's vote. */
export interface Voter {
  /** Local end of the lease; a voter past it that was never released is dropped at a sweep. */
  readonly leaseEnd: number;
  sessionEnded(session: Session, detail: string): void;
}

/**
 * One verified connection to a server. Everything the server did for us on it (grants, votes) is
 * only known to stand while it stays open: once it drops, a client cannot tell a network blip from
 * a restart that forgot every key, so the voters enlisted here are told at once.
 */
export class Session {
  private readonly voters = new Set<Voter>();
  private readonly sweeps = new SweepClock();
  private endedWith: string | undefined;

  constructor(
    /** The server (node label) this session is on: a grant has at most one standing vote per server. */
    readonly server: string,
    readonly client: Redis,
    readonly id: number,
  ) {}

  get ended(): boolean {
    return this.endedWith !== undefined;
  }

  /** Tells `voter` when this session ends (at once if it already has). */
  enlist(voter: Voter): void {
    if (this.endedWith !== undefined) {
      voter.sessionEnded(this, this.endedWith);
      return;
    }
    this.sweep();
    this.voters.add(voter);
  }

  withdraw(voter: Voter): void {
    this.voters.delete(voter);
  }

  end(detail: string): void {
    if (this.endedWith !== undefined) return;
    this.endedWith = detail;
    const voters = [...this.voters];
    this.voters.clear();
    for (const voter of voters) voter.sessionEnded(this, detail);
  }

  /** Locks that lapsed without a release (autoRenew: false, or an app that never released) are dropped. */
  private sweep(): void {
    const now = this.sweeps.due();
    if (now === undefined) return;
    for (const voter of this.voters) if (voter.leaseEnd < now) this.voters.delete(voter);
  }
}
