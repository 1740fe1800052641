import { InvalidArgumentError } from '@holdfast/core';
import { Redis, type RedisOptions } from 'ioredis';
import { untilAborted } from './until-aborted.js';

export interface NodeSettings {
  /** The database to SELECT; checked on every connection, never silently left at 0. */
  readonly db: number;
  /** Per-command time limit (0: none). */
  readonly commandTimeoutMs: number;
  /** Longest time from opening a connection to a usable one (TCP, handshake, SELECT). */
  readonly connectTimeoutMs: number;
}

/**
 * One verified connection to the server. Everything the server did for us on it (grants, votes) is
 * only known to stand while `node.sessionId` is still `id`: once the connection drops we cannot
 * tell a network blip from a restart that forgot every key.
 */
export interface Session {
  readonly client: Redis;
  readonly id: number;
}

/**
 * Connection settings that make a failing server fail fast: no offline queue, no resending of
 * commands that were in flight when a connection dropped (a late grant would be an orphan lock),
 * a bounded connect and command time. Reconnection continues in the background until close().
 * The db is left out: ioredis would SELECT it, ignore a refusal and go on in db 0.
 */
function failFast(base: RedisOptions, settings: NodeSettings, commandTimeoutMs: number): RedisOptions {
  const { db: _ignored, ...rest } = base;
  return {
    connectTimeout: settings.connectTimeoutMs,
    ...rest,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    // ioredis treats a commandTimeout of 0 as "time out at once"; 0 here means no limit.
    ...(commandTimeoutMs ? { commandTimeout: commandTimeoutMs } : {}),
    retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
    // How long ioredis waits for the server's side of a close before destroying the socket (default
    // 2 s, on a ref'd timer): a hung server never answers, and the timer kept processes alive after close().
    ...({ disconnectTimeout: 100 } as RedisOptions),
  };
}

const PERMANENT_CHANNEL = 'holdfast:subscriber';

/** One Redis server: a command connection and, on demand, a subscriber connection for wake-ups. */
export class RedisNode {
  readonly client: Redis;
  /** Told when a session ends: every grant whose vote lived on it may be gone. */
  onSessionEnded: ((node: RedisNode, detail: string) => void) | undefined;
  private session: Session | undefined;
  private sessions = 0;
  /** Bumped when a connection closes, so a verification that finishes late is discarded. */
  private connection = 0;
  private refusal: InvalidArgumentError | undefined;
  private firstAttemptOver = false;
  private readonly firstAttempt: Promise<void>;
  private settleFirstAttempt!: () => void;
  private subscriberClient: Redis | undefined;
  private subscriberConnect: Promise<void> | undefined;
  private lastError: Error | undefined;
  private readonly handshakeTimers = new Map<Redis, NodeJS.Timeout>();

  constructor(
    readonly label: string,
    private readonly options: RedisOptions,
    private readonly settings: NodeSettings,
  ) {
    this.firstAttempt = new Promise((resolve) => (this.settleFirstAttempt = resolve));
    this.client = this.connect(failFast(options, settings, settings.commandTimeoutMs));
    this.client.on('ready', () => void this.verify());
    this.client.on('close', () => this.connectionClosed());
    this.client.connect().catch(() => undefined);
  }

  get sessionId(): number | undefined {
    return this.session?.id;
  }

  /** False until the first session: no command of ours can have reached this server yet. */
  get everConnected(): boolean {
    return this.sessions > 0;
  }

  /** The current session; waits (bounded by `signal`) only for the very first connection attempt. */
  async ready(signal: AbortSignal): Promise<Session> {
    if (!this.firstAttemptOver) await untilAborted(this.firstAttempt, signal, `connect to ${this.label}`);
    if (this.refusal) throw this.refusal;
    if (this.session) return this.session;
    throw new Error(`${this.label} is not connected (${this.client.status}${this.lastError ? `: ${this.lastError.message}` : ''})`);
  }

  /**
   * The subscriber connection (created at first use), once ready; fails after the connect timeout.
   * `onDropped` runs when it closes: a server that restarted may have forgotten the keys waited on.
   */
  async subscriber(onMessage: (channel: string) => void, onDropped: () => void): Promise<Redis> {
    if (!this.subscriberClient) {
      // No command timeout here: a subscriber connection legitimately waits for messages.
      this.subscriberClient = this.connect(failFast(this.options, this.settings, 0));
      this.subscriberClient.on('message', onMessage);
      this.subscriberClient.on('close', onDropped);
      this.subscriberClient.on('ready', () => this.handshakeDone(this.subscriberClient!));
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

  /** Polite QUIT, given up when `signal` aborts or after one command timeout; then the sockets are closed. */
  async close(signal: AbortSignal): Promise<void> {
    const clients = [this.client, this.subscriberClient].filter((client): client is Redis => client !== undefined);
    const limit = AbortSignal.any([signal, AbortSignal.timeout(this.settings.commandTimeoutMs || this.settings.connectTimeoutMs)]);
    await untilAborted(Promise.all(clients.map((client) => quit(client))), limit, 'close').catch(() => undefined);
    for (const client of clients) {
      client.disconnect(false);
      dropSocket(client);
    }
    for (const timer of this.handshakeTimers.values()) clearTimeout(timer);
    this.handshakeTimers.clear();
  }

  /** Runs on every new connection before anyone may use it: SELECT the db; a refusal is a configuration error, not db 0. */
  private async verify(): Promise<void> {
    const connection = this.connection;
    const client = this.client;
    try {
      if (this.settings.db !== 0) await client.select(this.settings.db);
    } catch (error) {
      if (connection !== this.connection) return;
      // Only the server's own answer is a refusal; a timeout or a dropped connection is retried.
      if ((error as Error).name !== 'ReplyError') {
        this.lastError = error as Error;
        dropSocket(client);
        return;
      }
      this.refusal = new InvalidArgumentError(
        'url',
        `database ${this.settings.db} is refused by ${this.label} (${(error as Error).message}); the server's "databases" setting limits it`,
      );
      this.handshakeDone(client);
      this.endFirstAttempt();
      return;
    }
    if (connection !== this.connection) return;
    this.refusal = undefined;
    this.session = { client, id: ++this.sessions };
    this.handshakeDone(client);
    this.endFirstAttempt();
  }

  /**
   * A command failed on `session`. A server that says READONLY was turned into a replica (a
   * failover) and keeps our connection open: its data may be gone from the new primary, so the
   * session ends as if the connection had dropped, and reconnecting finds the new primary.
   */
  commandFailed(session: Session, error: unknown): void {
    if (this.session !== session || !/\bREADONLY\b/.test(String((error as Error | undefined)?.message))) return;
    this.endSession(`${this.label} answered READONLY: it was turned into a replica (a failover), and the new primary may not have the lock`);
    dropSocket(session.client);
  }

  private connectionClosed(): void {
    this.connection++;
    this.endFirstAttempt();
    this.endSession(`the connection to ${this.label} dropped: the server may have restarted or failed over and forgotten the lock`);
  }

  private endSession(detail: string): void {
    const ended = this.session;
    this.session = undefined;
    if (ended) this.onSessionEnded?.(this, detail);
  }

  private connect(options: RedisOptions): Redis {
    const client = new Redis(options);
    // Without a listener ioredis prints every connection error; the cause reaches callers instead.
    client.on('error', (error: Error) => {
      this.lastError = error;
    });
    // ioredis bounds the TCP connect only: a server that accepts and never answers would hold the
    // handshake forever. Start over when it takes longer than the connect timeout.
    client.on('connect', () => {
      this.handshakeDone(client);
      const timer = setTimeout(() => {
        this.handshakeTimers.delete(client);
        this.lastError = new Error(`no answer within ${this.settings.connectTimeoutMs} ms after connecting`);
        // Nobody waits for the socket to finish closing: the attempt is over now.
        if (client === this.client) this.endFirstAttempt();
        dropSocket(client);
      }, this.settings.connectTimeoutMs);
      timer.unref();
      this.handshakeTimers.set(client, timer);
    });
    client.on('close', () => this.handshakeDone(client));
    return client;
  }

  private endFirstAttempt(): void {
    this.firstAttemptOver = true;
    this.settleFirstAttempt();
  }

  private handshakeDone(client: Redis): void {
    clearTimeout(this.handshakeTimers.get(client));
    this.handshakeTimers.delete(client);
  }
}

/** Polite QUIT when connected. */
async function quit(client: Redis): Promise<void> {
  if (client.status === 'ready') await client.quit().catch(() => undefined);
}

/**
 * Closes the socket at once; ioredis then reconnects unless disconnect() was called. Its own
 * disconnect() half-closes and keeps a timer running for 2 s for the server's side of the close,
 * which a hung server never sends.
 */
function dropSocket(client: Redis): void {
  (client.stream as { destroy?: () => void } | undefined)?.destroy?.();
}
