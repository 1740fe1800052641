import type { Cluster, Redis } from 'ioredis';
import { isCluster } from './cluster-connection.js';

/** What a node learns from a connection it does not own. */
export interface AppClientEvents {
  error(error: Error): void;
  /** The connection is (again) ready for commands. */
  ready(): void;
  close(): void;
}

/**
 * The app's own ioredis client (the `client` option), used as the app set it up: Holdfast never
 * closes it, never changes its options or its db, and only adds listeners, which `detach()` removes.
 * A subscriber connection (wake-ups) is a `duplicate()` that Holdfast owns, with the settings
 * Holdfast's own connections have (no offline queue, no resending, its own resubscription), since
 * a connection in subscriber mode cannot serve the app anyway.
 */
export class AppClient {
  constructor(
    private readonly client: Redis,
    private readonly events: AppClientEvents,
  ) {
    client.on('error', events.error);
    client.on('ready', events.ready);
    client.on('close', events.close);
    // Already connected: no "ready" is coming. A lazy client connects at its first command anyway.
    if (client.status === 'ready') queueMicrotask(events.ready);
    else if (client.status === 'wait') client.connect().catch(() => undefined);
  }

  subscriber(): Redis {
    if (isCluster(this.client)) {
      const cluster = this.client as unknown as Cluster;
      // A Cluster's duplicate takes Cluster options; its nodes get Holdfast's subscriber settings.
      return cluster.duplicate([], {
        lazyConnect: true,
        enableOfflineQueue: true,
        redisOptions: { ...cluster.options.redisOptions, maxRetriesPerRequest: 0, autoResubscribe: false, commandTimeout: undefined },
      }) as unknown as Redis;
    }
    return this.client.duplicate({
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      autoResubscribe: false,
      commandTimeout: undefined,
      retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
    });
  }

  detach(): void {
    this.client.off('error', this.events.error);
    this.client.off('ready', this.events.ready);
    this.client.off('close', this.events.close);
  }
}
