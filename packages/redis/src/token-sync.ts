import type { Redis } from 'ioredis';
import type { Session } from './session.js';

/**
 * Applies one node's sync: its counter raised to `level`, its record of the grant set to `token`.
 * Sent as EVAL, never EVALSHA: a NOSCRIPT retry would run behind what the holder sent since.
 */
export type ApplySync = (client: Redis, level: bigint, token: bigint) => Promise<unknown>;

interface NodeCounter {
  readonly session: Session;
  counter: bigint;
  synced: boolean;
  /** The node granted before the grant was decided: the grant waits for its sync. */
  readonly deciding: boolean;
}

/**
 * Quorum: keeps the nodes' fencing counters level around a grant decided by the first majority's
 * answers. The token is the largest counter among those answers. Any node that answered another
 * counter gets a sync (`apply`: its counter raised to the largest seen, its record of the grant set
 * to the token: SYNC_TOKEN for a lock, SYNC_SHARE_TOKEN for a slot or a read-write grant). The grant is handed out only once every deciding node that granted has acknowledged its
 * sync (`acknowledged()`), and the sync goes out as EVAL, so nothing the holder sends later (a
 * release) can overtake it: by the time the key is free on such a node again, its counter is past
 * the token, and whichever majority grants next shares one. Counters that are level stay level
 * (every attempt bumps every node that answers it), so a healthy quorum sends nothing more.
 */
export class TokenSync {
  private readonly nodes: NodeCounter[] = [];
  private readonly awaited: Promise<unknown>[] = [];
  private handedOut = false;
  private level: bigint;

  constructor(
    private readonly token: bigint,
    private readonly apply: ApplySync,
  ) {
    this.level = token;
  }

  /** A node's counter as its answer (granted or busy) carried it; `deciding`: it granted before the grant was decided. */
  heard(session: Session | undefined, counter: bigint, deciding = false): void {
    if (!session) return;
    this.nodes.push({ session, counter, synced: false, deciding });
    if (counter > this.level) this.level = counter;
    for (const node of this.nodes) {
      if (node.counter !== this.level || (node.counter !== this.token && !node.synced)) this.sync(node);
    }
  }

  /**
   * Settles once every deciding node whose counter or record differed from the token has applied
   * its sync (undefined: none needed, no extra round trip); rejects when one of those syncs failed.
   * Syncs sent after this (late answers) are not waited for.
   */
  acknowledged(): Promise<unknown> | undefined {
    this.handedOut = true;
    return this.awaited.length === 0 ? undefined : Promise.all(this.awaited);
  }

  private sync(node: NodeCounter): void {
    node.counter = this.level;
    node.synced = true;
    const applied = this.apply(node.session.client, this.level, this.token);
    applied.catch(() => undefined);
    if (node.deciding && !this.handedOut) this.awaited.push(applied);
  }
}
