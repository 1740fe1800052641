import { untilAborted } from './until-aborted.js';
import type { RedisNode } from './redis-node.js';

interface Channel {
  readonly wakers: Set<() => void>;
  /** Settles once every reachable node acknowledged the SUBSCRIBE. */
  readonly subscribed: Promise<unknown>;
}

export interface Watch {
  /** Resolves at the first message on any watched channel. */
  readonly changed: Promise<void>;
  stop(): void;
}

/**
 * The provider's pub/sub side: one subscriber connection per node, channels subscribed while at
 * least one waiter watches them. Nodes that cannot subscribe are skipped; waiters then rely on
 * their time cap, so a broken subscriber costs latency, never correctness.
 */
export class ReleaseListener {
  private readonly channels = new Map<string, Channel>();

  constructor(private readonly nodes: readonly RedisNode[]) {}

  /**
   * Resolves once the subscriptions are active: a release published after that is seen. Rejects
   * when `signal` aborts first, leaving no subscription behind for this watcher.
   */
  async watch(names: readonly string[], signal: AbortSignal): Promise<Watch> {
    let wake!: () => void;
    const changed = new Promise<void>((resolve) => (wake = resolve));
    const joined = names.map((name) => this.join(name, wake));
    const stop = (): void => names.forEach((name) => this.leave(name, wake));
    try {
      await untilAborted(Promise.all(joined.map((channel) => channel.subscribed)), signal, 'subscribe');
    } catch (error) {
      stop();
      throw error;
    }
    return { changed, stop };
  }

  private join(name: string, wake: () => void): Channel {
    let channel = this.channels.get(name);
    if (!channel) {
      const subscribed = Promise.allSettled(
        this.nodes.map(async (node) => (await node.subscriber(this.onMessage, this.onDropped)).subscribe(name)),
      );
      channel = { wakers: new Set(), subscribed };
      this.channels.set(name, channel);
    }
    channel.wakers.add(wake);
    return channel;
  }

  private leave(name: string, wake: () => void): void {
    const channel = this.channels.get(name);
    if (!channel) return;
    channel.wakers.delete(wake);
    if (channel.wakers.size > 0) return;
    this.channels.delete(name);
    for (const node of this.nodes) void node.readySubscriber?.unsubscribe(name).catch(() => undefined);
  }

  private readonly onMessage = (name: string): void => {
    for (const wake of this.channels.get(name)?.wakers ?? []) wake();
  };

  /** A subscriber connection closed: messages may have been missed, so every waiter looks again. */
  private readonly onDropped = (): void => {
    for (const channel of this.channels.values()) for (const wake of channel.wakers) wake();
  };
}
