import { BackendError } from '@holdfast/core';
import { type BackendGrant, type CallContext, type Extension, NOT_HELD, stillHeld } from '@holdfast/core/backend';
import type { Redis } from 'ioredis';
import type { ForcedReleases, SlotWatcher } from './forced-releases.js';
import type { NodeSet } from './node-set.js';
import type { QuorumShare } from './quorum-share.js';
import type { SentCommands } from './sent-commands.js';
import type { Session, Voter } from './session.js';

/**
 * Frees the share on every node at once (a node never reached holds nothing); true if any node
 * freed it. With `after`, a node's release goes out once the commands sent there (the take to undo) settled.
 */
export async function releaseShare(nodes: NodeSet, share: QuorumShare, call: CallContext, after?: SentCommands): Promise<boolean> {
  const command = (client: Redis): Promise<number> => (after ? after.after(client, () => share.release(client)) : share.release(client));
  const votes = await nodes.ask(call, 'release', command, {
    ifNeverConnected: 0,
    decision: { decided: (partial) => partial.answers.length + partial.errors.length >= nodes.quorum && !partial.tooManyFailed },
  });
  if (votes.count((answer) => answer === 1) > 0) return true;
  if (votes.tooManyFailed) throw votes.failure('release');
  return false;
}

export interface ShareFields {
  readonly key: string;
  readonly lockId: string;
  readonly token: bigint;
  readonly acquiredAt: Date;
  readonly leaseEnd: number;
}

/**
 * A slot or read-write grant held on `share.needed` nodes of a quorum. As with the quorum lock
 * (redis-grant.ts), a node's vote stands while the connection it was cast on stays open, and the
 * holder is told at once when fewer than `needed` stand; a renewal counts when `needed` nodes
 * extended it within the lease less the drift allowance. Unlike the lock, a node that forgot the
 * grant is not repaired: taking a slot there again could exceed its limit while a holder elsewhere
 * still counts on it.
 */
export class QuorumShareGrant implements BackendGrant, Voter, SlotWatcher {
  readonly token: bigint;
  readonly acquiredAt: Date;
  readonly lockId: string;
  leaseEnd: number;
  private readonly key: string;
  private votes: Session[] = [];
  private gone = false;

  constructor(
    private readonly nodes: NodeSet,
    private readonly share: QuorumShare,
    fields: ShareFields,
    votes: Session[],
    private readonly onLost: (detail: string) => void,
    /** A slot's: a forced release of the key that names it tells the holder at once. */
    private readonly forced: ForcedReleases | undefined,
    /** The take's commands: a node's release goes out after its take settled (a late EVAL after NOSCRIPT). */
    private readonly sent: SentCommands,
  ) {
    this.key = fields.key;
    this.lockId = fields.lockId;
    this.token = fields.token;
    this.acquiredAt = fields.acquiredAt;
    this.leaseEnd = fields.leaseEnd;
    forced?.watch(this.key, this);
    this.count(votes, 'a connection dropped while the grant was being made');
  }

  get expiresAt(): Date {
    return new Date(this.leaseEnd);
  }

  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    const { nodes, share } = this;
    const started = Date.now();
    const votes = await nodes.ask(call, 'extend', (client) => share.extend(client, ttlMs), {
      decision: {
        decided: (partial) =>
          partial.count((answer) => answer === 1) >= share.needed || partial.count((answer) => answer !== 1) > nodes.size - share.needed,
        graceMs: nodes.straggleMs(ttlMs),
      },
    });
    if (votes.count((answer) => answer === 1) >= share.needed) {
      if (nodes.validity(ttlMs, started) <= 0) throw new BackendError('redis', 'extend: the quorum answered too late for the lease');
      this.leaseEnd = started + ttlMs;
      this.count(
        votes.votesFor((answer) => answer === 1),
        'a connection dropped while the grant was being renewed',
      );
      return stillHeld(this.expiresAt);
    }
    // Lost only when enough nodes positively deny it; otherwise we cannot tell, and core retries.
    if (votes.count((answer) => answer !== 1) > nodes.size - share.needed) {
      this.forget();
      return NOT_HELD;
    }
    throw votes.failure('extend');
  }

  release(call: CallContext): Promise<boolean> {
    this.forget();
    return releaseShare(this.nodes, this.share, call, this.sent);
  }

  async isHeld(call: CallContext): Promise<boolean> {
    const { nodes, share } = this;
    const votes = await nodes.ask(call, 'isHeld', (client) => share.held(client));
    const held = votes.count((answer) => answer === 1);
    if (held >= share.needed) return true;
    if (votes.answers.length - held > nodes.size - share.needed) {
      this.forget();
      return false;
    }
    throw votes.failure('isHeld');
  }

  sessionEnded(session: Session, detail: string): void {
    this.votes = this.votes.filter((vote) => vote !== session);
    this.stillStanding(detail);
  }

  forceReleased(): void {
    this.lost('force-released by an administrator');
  }

  /** The sessions that just granted or renewed it replace the votes of their servers; the other servers' votes stand. */
  private count(confirmed: Session[], detail: string): void {
    if (this.gone) return;
    const servers = new Set(confirmed.map((session) => session.server));
    for (const vote of this.votes) if (servers.has(vote.server)) vote.withdraw(this);
    this.votes = [...this.votes.filter((vote) => !servers.has(vote.server)), ...confirmed];
    for (const vote of confirmed) if (!this.gone) vote.enlist(this);
    this.stillStanding(detail);
  }

  private stillStanding(detail: string): void {
    if (this.gone) return;
    this.votes = this.votes.filter((vote) => !vote.ended);
    if (this.votes.length < this.share.needed) this.lost(detail);
  }

  private lost(detail: string): void {
    if (this.gone) return;
    this.forget();
    this.onLost(detail);
  }

  private forget(): void {
    this.gone = true;
    for (const vote of this.votes) vote.withdraw(this);
    this.votes = [];
    this.forced?.unwatch(this.key, this);
  }
}
