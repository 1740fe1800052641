import { type ForcedReleases, forcedSlotsIn } from './forced-releases.js';
import type { KeyNames } from './key-names.js';
import type { QueuedWaiters } from './queued-waiters.js';
import type { RedisNode } from './redis-node.js';
import type { WakeUps } from './wake-ups.js';

/** A release that names the next waiter of the key's queue: this prefix, then the waiter's id. */
const NAMED_RELEASE = 'released ';

/** Keyspace events after which a lock key is gone (redlock's release is a DEL). */
const FREEING_EVENTS = new Set(['del', 'expired', 'evicted']);

/**
 * The provider's one pub/sub subscription per node, for its whole life from the first wait: two
 * patterns cover every lock of the namespace (the release channels, and keyspace notifications
 * when the server has them on: redlock releases and expiries), so waiting never subscribes or
 * unsubscribes per key. Each message becomes one release for the wake-ups, except a semaphore's
 * forced release: one per freed slot, and its slot holders are told. Patterns also hear older
 * versions' per-key release channels, which they publish to and subscribe to alike.
 */
export class ReleaseSubscription {
  private started = false;

  constructor(
    private readonly nodes: readonly RedisNode[],
    private readonly names: KeyNames,
    private readonly wakeUps: WakeUps,
    private readonly forced: ForcedReleases,
    private readonly queued: QueuedWaiters,
  ) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    for (const node of this.nodes) this.listenTo(node);
  }

  private listenTo(node: RedisNode): void {
    const { names, wakeUps, forced, queued } = this;
    let listening = false;
    node.listen(names.wakeUpPatterns, {
      listening: () => {
        listening = true;
        wakeUps.listening();
        queued.wakeEveryone();
      },
      dropped: () => {
        if (!listening) return;
        listening = false;
        wakeUps.dropped();
        queued.wakeEveryone();
      },
      // Our release script's DEL is also notified when the server has keyspace notifications on: the
      // two messages of one release come together, and the second finds the waiter it would wake
      // already woken (see WakeUps.released).
      message: (channel, message) => {
        const released = names.releasedKey(channel);
        if (released !== undefined) {
          if (message.startsWith(NAMED_RELEASE)) queued.named(message.slice(NAMED_RELEASE.length));
          else queued.freed(released);
          const slots = forcedSlotsIn(message);
          if (slots === undefined) return wakeUps.released(released);
          forced.told(released, slots);
          for (const _ of slots) wakeUps.released(released);
          return;
        }
        const key = names.keyspaceKey(channel);
        if (key === undefined || !FREEING_EVENTS.has(message)) return;
        queued.freed(key);
        wakeUps.released(key);
      },
    });
  }
}
