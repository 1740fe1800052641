import type { LockKeys } from './key-names.js';
import { SYNC_TOKEN } from './quorum-scripts.js';
import type { Session } from './session.js';

interface NodeCounter {
  readonly session: Session;
  counter: bigint;
  synced: boolean;
}

/**
 * Quorum: keeps the nodes' fencing counters level around a grant decided by the first majority's
 * answers. The token is the largest counter among those answers. Any node that answered another
 * counter gets SYNC_TOKEN (its counter raised to the largest seen, its holder record set to the
 * token): for the deciding nodes this is sent before anything else the holder sends them, so by
 * the time the key is free on any of them again, its counter is past the token, and whichever
 * majority grants next shares such a node. Counters that are level stay level (every attempt
 * bumps every node that answers it), so a healthy quorum sends nothing more.
 */
export class TokenSync {
  private readonly nodes: NodeCounter[] = [];
  private level: bigint;

  constructor(
    private readonly token: bigint,
    private readonly keys: LockKeys,
    private readonly lockId: string,
  ) {
    this.level = token;
  }

  /** A node's counter as its answer (granted or busy) carried it. */
  heard(session: Session | undefined, counter: bigint): void {
    if (!session) return;
    this.nodes.push({ session, counter, synced: false });
    if (counter > this.level) this.level = counter;
    for (const node of this.nodes) {
      if (node.counter !== this.level || (node.counter !== this.token && !node.synced)) this.sync(node);
    }
  }

  private sync(node: NodeCounter): void {
    node.counter = this.level;
    node.synced = true;
    const args = [this.level.toString(), this.token.toString(), this.lockId];
    SYNC_TOKEN.run(node.session.client, [this.keys.fence, this.keys.holder], args).catch(() => undefined);
  }
}
