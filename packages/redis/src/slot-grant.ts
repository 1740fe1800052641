import { type BackendGrant, type CallContext, type Extension, NOT_HELD, stillHeld } from '@holdfast/core/backend';
import type { ForcedReleases, SlotWatcher } from './forced-releases.js';
import type { LockKeys } from './key-names.js';
import type { NodeSet } from './node-set.js';
import { confirmReplicated } from './replica-sync.js';
import type { Session, Voter } from './session.js';
import { onTheNode } from './single-node-call.js';
import { EXTEND_SLOT, RELEASE_SLOT, SLOT_HELD } from './slot-scripts.js';

/** Frees `lockId`'s slot of the semaphore if it holds one (and wakes a waiter); true if it did. */
export async function releaseSlot(nodes: NodeSet, keys: LockKeys, lockId: string, call: CallContext): Promise<boolean> {
  const { value } = await onTheNode(
    nodes,
    call,
    'release',
    (client) => RELEASE_SLOT.run(client, [keys.lock, keys.slots], [lockId, keys.channel]) as Promise<number>,
  );
  return value === 1;
}

export interface SlotFields {
  /** The user's key: forced releases are announced by it. */
  readonly key: string;
  readonly lockId: string;
  readonly token: bigint;
  readonly acquiredAt: Date;
  /** Local end of the lease (from when the attempt was sent), on which `expiresAt` is based. */
  readonly leaseEnd: number;
  readonly onLost: (detail: string) => void;
}

/**
 * One slot of a semaphore on one Redis server: `lockId` is a member of the key's sorted set, and
 * every operation is owner-checked by it. As with a plain lock, the slot is only known to stand
 * while the connection it was granted on stays open (a restart without persistence forgets it);
 * and a forced release of its key that names it tells its holder at once, not at its next renewal.
 */
export class RedisSlot implements BackendGrant, Voter, SlotWatcher {
  readonly token: bigint;
  readonly acquiredAt: Date;
  readonly lockId: string;
  leaseEnd: number;
  private readonly key: string;
  private readonly onLost: (detail: string) => void;
  private gone = false;

  constructor(
    private readonly nodes: NodeSet,
    private readonly keys: LockKeys,
    fields: SlotFields,
    private readonly session: Session | undefined,
    private readonly forced: ForcedReleases,
  ) {
    this.key = fields.key;
    this.lockId = fields.lockId;
    this.token = fields.token;
    this.acquiredAt = fields.acquiredAt;
    this.leaseEnd = fields.leaseEnd;
    this.onLost = fields.onLost;
    session?.enlist(this);
    forced.watch(this.key, this);
  }

  get expiresAt(): Date {
    return new Date(this.leaseEnd);
  }

  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    const started = Date.now();
    const { value, session } = await onTheNode(
      this.nodes,
      call,
      'extend',
      (client) => EXTEND_SLOT.run(client, [this.keys.lock, this.keys.slots], [this.lockId, ttlMs]) as Promise<number>,
    );
    if (value !== 1) {
      this.forget();
      return NOT_HELD;
    }
    // Not counted until replicated (the `replicas` option): a promoted replica would let the old lease run out.
    const sync = this.nodes.replicaSync;
    if (sync && session) await confirmReplicated(session.client, this.keys.lock, sync, call, 'extend');
    this.leaseEnd = started + ttlMs;
    return stillHeld(this.expiresAt);
  }

  release(call: CallContext): Promise<boolean> {
    this.forget();
    return releaseSlot(this.nodes, this.keys, this.lockId, call);
  }

  async isHeld(call: CallContext): Promise<boolean> {
    const { value } = await onTheNode(
      this.nodes,
      call,
      'isHeld',
      (client) => SLOT_HELD.run(client, [this.keys.lock], [this.lockId]) as Promise<number>,
    );
    if (value !== 1) this.forget();
    return value === 1;
  }

  sessionEnded(_session: Session, detail: string): void {
    this.lost(detail);
  }

  forceReleased(): void {
    this.lost('force-released by an administrator');
  }

  private lost(detail: string): void {
    if (this.gone) return;
    this.forget();
    this.onLost(detail);
  }

  /** No longer ours to watch: released, lost or found gone. */
  private forget(): void {
    this.gone = true;
    this.session?.withdraw(this);
    this.forced.unwatch(this.key, this);
  }
}
