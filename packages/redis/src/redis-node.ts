import { Redis, type RedisOptions } from 'ioredis';

/**
 * Connection settings that make a failing server fail fast: no offline queue, no resending of
 * commands that were in flight when a connection dropped (a late grant would be an orphan lock),
 * a bounded connect and command time. Reconnection continues in the background until close().
 */
function failFast(base: RedisOptions, commandTimeoutMs: number | undefined): RedisOptions {
  return {
    connectTimeout: 3000,
    ...base,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    // ioredis treats a commandTimeout of 0 as "time out at once"; 0 or undefined here means no limit.
    ...(commandTimeoutMs ? { commandTimeout: commandTimeoutMs } : {}),
    retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
  };
}

const PERMANENT_CHANNEL = 'holdfast:subscriber';

/** One Redis server: a command connection and, on demand, a subscriber connection for wake-ups. */
export class RedisNode {
  readonly client: Redis;
  private subscriberClient: Redis | undefined;
  private readonly firstConnect: Promise<void>;
  private subscriberConnect: Promise<void> | undefined;
  private lastError: Error | undefined;

  constructor(
    readonly label: string,
    private readonly options: RedisOptions,
    commandTimeoutMs: number,
  ) {
    this.client = this.connect(failFast(options, commandTimeoutMs));
    this.firstConnect = this.client.connect().catch(() => undefined);
  }

  /** The command connection, once ready; rejects at once while the server is unreachable. */
  async ready(): Promise<Redis> {
    if (this.client.status !== 'ready') await this.firstConnect;
    if (this.client.status !== 'ready') {
      throw new Error(`${this.label} is not connected (${this.client.status}${this.lastError ? `: ${this.lastError.message}` : ''})`);
    }
    return this.client;
  }

  /** The subscriber connection (created at first use), once ready. */
  async subscriber(onMessage: (channel: string) => void): Promise<Redis> {
    if (!this.subscriberClient) {
      // No command timeout here: a subscriber connection legitimately waits for messages.
      this.subscriberClient = this.connect(failFast(this.options, undefined));
      this.subscriberClient.on('message', onMessage);
      const subscriber = this.subscriberClient;
      // A permanent subscription keeps the connection in subscriber mode between waits, so ioredis
      // never has to leave and re-enter it while an UNSUBSCRIBE and a SUBSCRIBE are in flight.
      this.subscriberConnect = subscriber.connect().then(() => subscriber.subscribe(PERMANENT_CHANNEL)).then(
        () => undefined,
        () => undefined,
      );
    }
    const subscriber = this.subscriberClient;
    if (subscriber.status !== 'ready') await this.subscriberConnect;
    if (subscriber.status !== 'ready') throw new Error(`${this.label} subscriber is not connected (${subscriber.status})`);
    return subscriber;
  }

  /** The subscriber if it exists and is usable, for unsubscribing. */
  get readySubscriber(): Redis | undefined {
    return this.subscriberClient?.status === 'ready' ? this.subscriberClient : undefined;
  }

  async close(): Promise<void> {
    await Promise.all([this.client, this.subscriberClient].map((client) => client && quit(client)));
  }

  private connect(options: RedisOptions): Redis {
    const client = new Redis(options);
    // Without a listener ioredis prints every connection error; the cause reaches callers instead.
    client.on('error', (error: Error) => {
      this.lastError = error;
    });
    return client;
  }
}

/** Polite QUIT when connected, then disconnect, which also cancels any pending reconnect timer. */
async function quit(client: Redis): Promise<void> {
  if (client.status === 'ready') await client.quit().catch(() => undefined);
  client.disconnect(false);
}
