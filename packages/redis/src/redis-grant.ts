import { BackendError } from '@holdfast/core';
import { type BackendGrant, type CallContext, type Extension, NOT_HELD, stillHeld } from '@holdfast/core/backend';
import type { Redis } from 'ioredis';
import { valueHolds } from './holder-record.js';
import type { LockKeys } from './key-names.js';
import type { NodeSet } from './node-set.js';
import { confirmReplicated } from './replica-sync.js';
import { EXTEND, QUORUM_RELEASE, RELEASE, REPAIR } from './scripts.js';
import { SentCommands } from './sent-commands.js';
import type { Session, Voter } from './session.js';
import { onTheNode } from './single-node-call.js';
import { BACKGROUND } from './until-aborted.js';

/**
 * Frees the lock if `lockId` holds it, on every node at once; a majority's answers are enough to
 * report the outcome, and a server we never reached cannot hold it. True if any node freed it.
 * With `after`, a node's release goes out once the commands sent there (the grant to undo) settled.
 */
export async function releaseLock(
  nodes: NodeSet,
  keys: LockKeys,
  lockId: string,
  call: CallContext,
  after?: SentCommands,
): Promise<boolean> {
  // Only one server queues waiters (queue-scripts.ts); only a quorum has holder hashes.
  const [script, releaseKeys] = nodes.isQuorum
    ? [QUORUM_RELEASE, [keys.lock, keys.holder]]
    : [RELEASE, [keys.lock, keys.queue, keys.queueExpiries]];
  const run = (client: Redis): Promise<number> => script.run(client, releaseKeys, [lockId, keys.channel]) as Promise<number>;
  const command = (client: Redis): Promise<number> => (after ? after.after(client, () => run(client)) : run(client));
  // One connected node (nearly always): it answers, or the release failed.
  if (!nodes.isQuorum && nodes.nodes[0]!.usableSession) return (await onTheNode(nodes, call, 'release', command)).value === 1;
  const votes = await nodes.ask(call, 'release', command, {
    ifNeverConnected: 0,
    decision: { decided: (partial) => partial.answers.length + partial.errors.length >= nodes.quorum && !partial.tooManyFailed },
  });
  if (votes.count((answer) => answer === 1) > 0) return true;
  if (votes.tooManyFailed) throw votes.failure('release');
  return false;
}

/** GET of a key that is not a string (a semaphore took the key after this lock lapsed) holds no lockId. */
function noValueIfNotAString(error: unknown): null {
  if (String((error as Error | undefined)?.message).startsWith('WRONGTYPE')) return null;
  throw error;
}

export interface GrantFields {
  readonly lockId: string;
  readonly token: bigint;
  readonly acquiredAt: Date;
  /** Local end of the lease, on which `expiresAt` and the vote bookkeeping are based. */
  readonly leaseEnd: number;
  readonly onLost: (detail: string) => void;
}

/**
 * A lock held on Redis: the lock key's value is `lockId`, and every operation is owner-checked by
 * it. In quorum mode the grant keeps the sessions that voted for it: a vote stands while the
 * connection it was cast on stays open (a restart without persistence forgets the key, and the
 * client cannot tell it from a blip), and the holder is told at once when fewer than a majority stand.
 */
export class RedisGrant implements BackendGrant, Voter {
  readonly token: bigint;
  readonly acquiredAt: Date;
  leaseEnd: number;
  private readonly lockId: string;
  private readonly onLost: (detail: string) => void;
  private votes: Session[] = [];
  private gone = false;
  private readonly repairs = new SentCommands();

  constructor(
    private readonly nodes: NodeSet,
    private readonly keys: LockKeys,
    fields: GrantFields,
    /** The connections that granted it; null for a resumed lock, whose first renewal counts them. */
    votes: Session[] | null,
  ) {
    this.lockId = fields.lockId;
    this.token = fields.token;
    this.acquiredAt = fields.acquiredAt;
    this.leaseEnd = fields.leaseEnd;
    this.onLost = fields.onLost;
    if (votes !== null) this.counted(votes, [], 'a connection dropped while the lock was being granted');
  }

  get expiresAt(): Date {
    return new Date(this.leaseEnd);
  }

  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    const { nodes } = this;
    const started = Date.now();
    const votes = await nodes.ask(
      call,
      'extend',
      (client) =>
        EXTEND.run(client, nodes.isQuorum ? [this.keys.lock, this.keys.holder] : [this.keys.lock], [this.lockId, ttlMs]) as Promise<number>,
      {
        decision: {
          decided: (partial) =>
            partial.count((answer) => answer === 1) >= nodes.quorum || partial.count((answer) => answer !== 1) > nodes.size - nodes.quorum,
          graceMs: nodes.straggleMs(ttlMs),
        },
      },
    );
    const extended = votes.count((answer) => answer === 1);
    if (extended >= nodes.quorum) {
      if (nodes.validity(ttlMs, started) <= 0) throw new BackendError('redis', 'extend: the quorum answered too late for the lease');
      // Not counted until replicated: a promoted replica would let the old lease run out.
      const session = votes.votesFor((answer) => answer === 1)[0];
      if (nodes.replicaSync && session) await confirmReplicated(session.client, this.keys.lock, nodes.replicaSync, call, 'extend');
      this.leaseEnd = started + ttlMs;
      const denied = votes.votesFor((answer) => answer !== 1).map((session) => session.server);
      this.counted(
        votes.votesFor((answer) => answer === 1),
        denied,
        'a connection dropped while the lock was being renewed',
      );
      // In the background: a hung node must not hold up the renewal.
      if (nodes.isQuorum && extended < nodes.size) void this.repair(ttlMs);
      return stillHeld(new Date(this.leaseEnd));
    }
    // Lost only when enough nodes positively deny it; otherwise we cannot tell, and core retries.
    if (votes.count((answer) => answer !== 1) > nodes.size - nodes.quorum) {
      this.forget();
      return NOT_HELD;
    }
    throw votes.failure('extend');
  }

  release(call: CallContext): Promise<boolean> {
    this.forget();
    // After a repair still in flight on a node: its late SET NX would otherwise put the key back.
    return releaseLock(this.nodes, this.keys, this.lockId, call, this.repairs);
  }

  async isHeld(call: CallContext): Promise<boolean> {
    const { nodes, lockId } = this;
    const votes = await nodes.ask(call, 'isHeld', (client) => client.get(this.keys.lock).catch(noValueIfNotAString), {
      decision: {
        decided: (partial) =>
          partial.count((value) => valueHolds(value, lockId)) >= nodes.quorum ||
          partial.count((value) => !valueHolds(value, lockId)) > nodes.size - nodes.quorum,
      },
    });
    const held = votes.count((value) => valueHolds(value, lockId));
    if (held >= nodes.quorum) return true;
    if (votes.answers.length - held > nodes.size - nodes.quorum) {
      this.forget();
      return false;
    }
    throw votes.failure('isHeld');
  }

  /** Quorum: a node that granted after the majority had decided votes too, unless that server already has a vote. */
  lateVote(session: Session): void {
    if (this.gone || this.votes.some((vote) => vote.server === session.server)) return;
    this.counted([session], [], 'a connection dropped while the lock was being granted');
  }

  sessionEnded(session: Session, detail: string): void {
    this.votes = this.votes.filter((vote) => vote !== session);
    this.stillStanding(detail);
  }

  /**
   * Confirmed votes replace those of the same servers, denied servers lose theirs, the rest keep
   * them; fewer than a majority left standing is a loss.
   */
  private counted(confirmed: Session[], denied: readonly string[], detail: string): void {
    if (this.gone) return;
    if (this.votes.length > 0) {
      const replaced = new Set([...confirmed.map((session) => session.server), ...denied]);
      for (const vote of this.votes) if (replaced.has(vote.server)) vote.withdraw(this);
      this.votes = [...this.votes.filter((vote) => !replaced.has(vote.server)), ...confirmed];
    } else {
      this.votes = [...confirmed];
    }
    for (const vote of confirmed) if (!this.gone) vote.enlist(this);
    this.stillStanding(detail);
  }

  private stillStanding(detail: string): void {
    if (this.gone) return;
    this.votes = this.votes.filter((vote) => !vote.ended);
    if (this.votes.length >= this.nodes.quorum) return;
    this.forget();
    this.onLost(detail);
  }

  /** No longer ours to watch: released, lost or denied. */
  private forget(): void {
    this.gone = true;
    for (const vote of this.votes) vote.withdraw(this);
    this.votes = [];
  }

  /**
   * Puts the key back on nodes that forgot it (a restart without persistence) while we hold a
   * majority; those nodes vote for the grant again. Best effort, bounded by the command timeout.
   */
  private async repair(ttlMs: number): Promise<void> {
    const votes = await this.nodes
      .ask(BACKGROUND, 'repair', (client) =>
        this.repairs.track(client, REPAIR.run(client, [this.keys.lock], [this.lockId, ttlMs]) as Promise<number>),
      )
      .catch(() => undefined);
    if (votes)
      this.counted(
        votes.votesFor((answer) => answer === 1),
        [],
        'a connection dropped while the lock was being repaired',
      );
  }
}
