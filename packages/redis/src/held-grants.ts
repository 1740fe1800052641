import type { RedisNode } from './redis-node.js';
import type { Vote } from './votes.js';

interface HeldGrant {
  readonly onLost: (detail: string) => void;
  votes: Vote[];
  /** Local end of the lease: past it the entry is only kept until the next sweep. */
  expiresAt: number;
}

const SWEEP_EVERY_MS = 10_000;

/**
 * The grants this provider holds and the node connections their votes live on. A server that
 * restarts without persistence forgets every key, and a client cannot tell a restart from a network
 * blip until it reconnects, by which time another process may already have been granted the key.
 * So a vote counts only while the connection it was cast on stays open, and a grant left with
 * fewer votes than a majority is reported lost at once.
 */
export class HeldGrants {
  private readonly grants = new Map<string, HeldGrant>();
  private lastSweep = Date.now();

  constructor(private readonly quorum: number) {}

  get size(): number {
    return this.grants.size;
  }

  add(lockId: string, onLost: (detail: string) => void, votes: Vote[], expiresAt: number): void {
    this.sweep();
    this.grants.set(lockId, { onLost, votes, expiresAt });
    this.check(lockId, 'a connection dropped while the lock was being granted');
  }

  /**
   * After a renewal (or a repair): confirmed votes replace the old ones, denied nodes lose theirs,
   * the rest keep them. `expiresAt` undefined keeps the lease end.
   */
  renewed(lockId: string, confirmed: Vote[], denied: readonly RedisNode[], expiresAt: number | undefined): void {
    const grant = this.grants.get(lockId);
    if (!grant) return;
    const replaced = new Set([...confirmed.map((vote) => vote.node), ...denied]);
    grant.votes = [...grant.votes.filter((vote) => !replaced.has(vote.node)), ...confirmed];
    if (expiresAt !== undefined) grant.expiresAt = expiresAt;
    this.check(lockId, 'a connection dropped while the lock was being renewed');
  }

  forget(lockId: string): void {
    this.grants.delete(lockId);
  }

  /** A node's connection closed: every vote cast on it is void. */
  sessionEnded(node: RedisNode, detail: string): void {
    for (const [lockId, grant] of [...this.grants]) {
      if (grant.votes.some((vote) => vote.node === node)) this.check(lockId, detail);
    }
  }

  private check(lockId: string, detail: string): void {
    const grant = this.grants.get(lockId);
    if (!grant) return;
    const standing = grant.votes.filter((vote) => vote.node.sessionId === vote.session);
    grant.votes = standing;
    if (standing.length >= this.quorum) return;
    this.grants.delete(lockId);
    grant.onLost(detail);
  }

  /** Locks that lapsed without a release (autoRenew: false, or an app that never released) are dropped. */
  private sweep(): void {
    const now = Date.now();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    for (const [lockId, grant] of this.grants) if (grant.expiresAt < now) this.grants.delete(lockId);
  }
}
