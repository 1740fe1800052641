import { type ForcedReleases, forcedSlotsIn } from './forced-releases.js';
import type { KeyNames } from './key-names.js';
import type { QueuedWaiters } from './queued-waiters.js';
import type { RedisNode, SubscriptionHandlers } from './redis-node.js';
import type { WakeUps } from './wake-ups.js';

/** A release that names the next waiter of the key's queue: this prefix, then the waiter's id. */
const NAMED_RELEASE = 'released ';

/** Keyspace events after which a lock key is gone (redlock's release is a DEL). */
const FREEING_EVENTS = new Set(['del', 'expired', 'evicted']);

/**
 * The provider's one pub/sub connection per node, for its whole life from the first wait, with two
 * subscriptions that never change per key: its own wake channel, which release scripts use to name
 * one of its queued waiters (the release goes to that provider alone, whatever the number of
 * waiters: queued waiters need nothing else), and, from the first wait that needs them (observers,
 * semaphores, a quorum's waiters), two patterns that cover every lock of the namespace (the release
 * channels, and keyspace notifications when the server has them on: redlock releases and expiries).
 * Each message becomes one release for the wake-ups, except a semaphore's forced release: one per
 * freed slot, and its slot holders are told. Patterns also hear older versions' per-key release
 * channels, which they publish to and subscribe to alike.
 */
/** Told by the messages: queued waiters (one server only) and semaphore slot holders. */
export interface SingleNodeListeners {
  readonly queued?: QueuedWaiters;
  readonly forced: ForcedReleases;
}

export class ReleaseSubscription {
  private readonly handlers: SubscriptionHandlers;
  private patterns = false;
  private wakeChannel = false;

  constructor(
    private readonly nodes: readonly RedisNode[],
    private readonly names: KeyNames,
    private readonly wakeUps: WakeUps,
    /** A quorum has slot holders only. */
    private readonly single: SingleNodeListeners | undefined,
  ) {
    this.handlers = this.handlersFor();
  }

  /** Release messages of every lock: for waits on wake-ups, slot holders and observers. */
  start(): void {
    if (this.patterns) return;
    this.patterns = true;
    for (const node of this.nodes) node.listen(this.handlers, { patterns: this.names.wakeUpPatterns });
  }

  /** The provider's own wake channel: for its queued waiters. */
  startWakeChannel(): void {
    if (this.wakeChannel || !this.single?.queued) return;
    this.wakeChannel = true;
    for (const node of this.nodes) node.listen(this.handlers, { channels: [this.single.queued.wakeChannel] });
  }

  private handlersFor(): SubscriptionHandlers {
    const { names, wakeUps } = this;
    const { queued, forced } = this.single ?? {};
    let listening = false;
    return {
      // A subscription added later also comes here: its messages so far may have been missed.
      listening: () => {
        listening = true;
        wakeUps.listening();
        queued?.wakeEveryone();
      },
      dropped: () => {
        if (!listening) return;
        listening = false;
        wakeUps.dropped();
        queued?.wakeEveryone();
      },
      // Our release script's DEL is also notified when the server has keyspace notifications on: the
      // two messages of one release come together, and the second finds the waiter it would wake
      // already woken (see WakeUps.released). A named release comes on the key's channel and on the
      // waiter's provider's wake channel: the second finds the waiter woken too.
      message: (channel, message) => {
        if (channel === queued?.wakeChannel) {
          if (message.startsWith(NAMED_RELEASE)) queued.named(message.slice(NAMED_RELEASE.length));
          return;
        }
        const released = names.releasedKey(channel);
        if (released !== undefined) {
          if (message.startsWith(NAMED_RELEASE)) queued?.named(message.slice(NAMED_RELEASE.length));
          else queued?.freed(released);
          const slots = forcedSlotsIn(message);
          if (slots === undefined) return wakeUps.released(released);
          forced?.told(released, slots);
          for (const _ of slots) wakeUps.released(released);
          return;
        }
        const key = names.keyspaceKey(channel);
        if (key === undefined || !FREEING_EVENTS.has(message)) return;
        queued?.freed(key);
        wakeUps.released(key);
      },
    };
  }
}
