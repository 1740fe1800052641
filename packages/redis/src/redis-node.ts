import { BackendError, InvalidArgumentError } from '@holdfast/core';
import type { CallContext } from '@holdfast/core/backend';
import type { Redis, RedisOptions } from 'ioredis';
import { AppClient } from './app-client.js';
import { failFastCluster, isCluster, primariesOf, refreshAfterFailure, watchFailovers } from './cluster-connection.js';
import { dropSocket, failFastClient, keepTimerListFor, type NodeSettings, quit } from './connections.js';
import { Session } from './session.js';
import type { HostPort } from './topology-url.js';
import { untilAborted } from './until-aborted.js';

/** What a node's pub/sub connection reports to its owner. */
export interface SubscriptionHandlers {
  /** Subscriptions are active (at first, again after a reconnect, or one added): their messages from now on arrive. */
  listening(): void;
  message(channel: string, message: string): void;
  /** The connection closed: messages are missed until `listening` comes again. */
  dropped(): void;
}

/** One Redis server: a command connection and, once someone waits, a pub/sub connection for wake-ups. */
export class RedisNode {
  private readonly client: Redis;
  private session: Session | undefined;
  private sessions = 0;
  /** Bumped when a connection closes, so a verification that finishes late is discarded. */
  private connection = 0;
  private refusal: InvalidArgumentError | undefined;
  private firstAttemptOver = false;
  private readonly firstAttempt: Promise<void>;
  private settleFirstAttempt!: () => void;
  private subscriber: Redis | undefined;
  private readonly patterns = new Set<string>();
  private readonly channels = new Set<string>();
  private closed = false;
  private lastError: Error | undefined;
  private readonly handshakeTimers = new Map<Redis, NodeJS.Timeout>();
  private readonly commandTimers: { close(): void };

  private readonly appClient: AppClient | undefined;

  constructor(
    readonly label: string,
    private readonly options: RedisOptions,
    private readonly settings: NodeSettings,
    /** The app's own client (the `client` option): used as it is, never closed (app-client.ts). */
    appsOwn?: Redis,
    /** A Redis Cluster's seed nodes: this node is then the whole Cluster, through one ioredis Cluster. */
    private readonly clusterSeeds?: readonly HostPort[],
  ) {
    this.firstAttempt = new Promise((resolve) => (this.settleFirstAttempt = resolve));
    this.commandTimers = keepTimerListFor(settings.commandTimeoutMs);
    this.client = appsOwn ?? this.watched(this.newClient(settings.commandTimeoutMs));
    // A Cluster stays 'ready' through a failover: the grants of the session so far may be gone, so
    // their holders are told and the commands from now on count on a new session.
    watchFailovers(this.client, (detail) => {
      if (!this.session) return;
      this.endSession(detail);
      this.session = new Session(this.label, this.client, ++this.sessions);
    });
    if (appsOwn) {
      this.appClient = new AppClient(appsOwn, {
        error: (error) => (this.lastError = error),
        ready: () => void this.verify(),
        close: () => this.connectionClosed(),
      });
      return;
    }
    this.client.on('ready', () => void this.verify());
    this.client.on('close', () => this.connectionClosed());
    this.client.connect().catch(() => undefined);
  }

  /** False until the first session: no command of ours can have reached this server yet. */
  get everConnected(): boolean {
    return this.sessions > 0;
  }

  /** The current session, once the first connection attempt is over and the server accepted the db. */
  get usableSession(): Session | undefined {
    return this.firstAttemptOver && !this.refusal ? this.session : undefined;
  }

  /** The current session; waits (bounded by `call`) only for the very first connection attempt. */
  async ready(call: CallContext): Promise<Session> {
    if (!this.firstAttemptOver) await untilAborted(this.firstAttempt, call, `connect to ${this.label}`);
    if (this.refusal) throw this.refusal;
    if (this.session) return this.session;
    const cause = this.lastError ? `: ${this.lastError.message}` : '';
    throw new BackendError('redis', `${this.label} is not connected (${this.client.status}${cause})`, this.lastError);
  }

  /**
   * Opens the pub/sub connection (once) and subscribes `patterns` and `channels` on it, again after
   * every reconnect; a later call adds its own to the same connection. `listening` comes once each
   * addition is active. A server that refuses a subscription (an ACL) leaves the waiters to their timers.
   */
  listen(
    handlers: SubscriptionHandlers,
    { patterns = [], channels = [] }: { patterns?: readonly string[]; channels?: readonly string[] },
  ): void {
    if (this.closed) return;
    const newPatterns = patterns.filter((pattern) => !this.patterns.has(pattern));
    const newChannels = channels.filter((channel) => !this.channels.has(channel));
    for (const pattern of newPatterns) this.patterns.add(pattern);
    for (const channel of newChannels) this.channels.add(channel);
    if (this.subscriber) {
      if (this.subscriber.status === 'ready') subscribe(this.subscriber, newPatterns, newChannels, handlers);
      return;
    }
    // No command timeout here: a subscriber connection legitimately waits for messages. With the
    // app's client, a duplicate of it that this node owns (and closes).
    const subscriber = this.watched(this.appClient?.subscriber() ?? this.newClient(0));
    this.subscriber = subscriber;
    subscriber.on('ready', () => {
      this.handshakeDone(subscriber);
      subscribe(subscriber, [...this.patterns], [...this.channels], handlers);
    });
    subscriber.on('pmessage', (_pattern: string, channel: string, message: string) => handlers.message(channel, message));
    subscriber.on('message', (channel: string, message: string) => handlers.message(channel, message));
    subscriber.on('close', () => handlers.dropped());
    subscriber.connect().catch(() => undefined);
  }

  /** Polite QUIT, given up when `signal` aborts or after one command timeout; then the sockets are closed. */
  async close(signal: AbortSignal): Promise<void> {
    this.closed = true;
    // The app's client stays as it is: only this node's listeners leave it.
    this.appClient?.detach();
    const own = this.appClient ? [this.subscriber] : [this.client, this.subscriber];
    const clients = own.filter((client): client is Redis => client !== undefined);
    const limit = AbortSignal.any([signal, AbortSignal.timeout(this.settings.commandTimeoutMs || this.settings.connectTimeoutMs)]);
    await untilAborted(Promise.all(clients.map((client) => quit(client))), { signal: limit }, 'close').catch(() => undefined);
    for (const client of clients) {
      client.disconnect(false);
      dropSocket(client);
    }
    for (const timer of this.handshakeTimers.values()) clearTimeout(timer);
    this.handshakeTimers.clear();
    this.commandTimers.close();
  }

  /**
   * A command failed on `session`. On a Cluster, a timeout or a dropped connection refreshes the slot
   * map (refreshAfterFailure). A server that says READONLY was turned into a replica (a
   * failover) and keeps our connection open: its data may be gone from the new primary, so the
   * session ends as if the connection had dropped, and reconnecting finds the new primary.
   */
  commandFailed(session: Session, error: unknown): void {
    if (this.session !== session) return;
    refreshAfterFailure(session.client, error);
    if (!/\bREADONLY\b/.test(String((error as Error | undefined)?.message))) return;
    this.endSession(
      `${this.label} answered READONLY: it was turned into a replica (a failover), and the new primary may not have the lock`,
    );
    // The app's connection is the app's to reconnect.
    if (!this.appClient) dropSocket(session.client);
  }

  /** A new client: a plain (or Sentinel-configured) Redis, or the Cluster of the seeds. */
  private newClient(commandTimeoutMs: number): Redis {
    return this.clusterSeeds
      ? failFastCluster(this.clusterSeeds, this.options, this.settings, commandTimeoutMs)
      : failFastClient(this.options, this.settings, commandTimeoutMs);
  }

  /** Runs on every new connection before anyone may use it: SELECT the db; a refusal is a configuration error, not db 0. */
  private async verify(): Promise<void> {
    const connection = this.connection;
    const client = this.client;
    try {
      // The app's client selected its own db (settings.db is read from it): never changed here.
      if (this.settings.db !== 0 && !this.appClient) await client.select(this.settings.db);
      // A Cluster opens a primary's connection at its first command: opened now, the first grants
      // do not pay for it (their short leases would run out on the way).
      if (isCluster(client)) await Promise.all(primariesOf(client).map((primary) => primary.ping()));
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
    this.session = new Session(this.label, client, ++this.sessions);
    this.handshakeDone(client);
    this.endFirstAttempt();
  }

  private connectionClosed(): void {
    this.connection++;
    this.endFirstAttempt();
    this.endSession(`the connection to ${this.label} dropped: the server may have restarted or failed over and forgotten the lock`);
  }

  private endSession(detail: string): void {
    const ended = this.session;
    this.session = undefined;
    ended?.end(detail);
  }

  /** Error reporting and a bounded handshake for a new client. */
  private watched(client: Redis): Redis {
    // Without a listener ioredis prints every connection error; the cause reaches callers instead.
    client.on('error', (error: Error) => {
      this.lastError = error;
      // No Sentinel answered (ioredis retries the pass without closing anything): callers waiting
      // for the first connection hear so now instead of at their deadline.
      if (client === this.client && this.options.sentinels) this.endFirstAttempt();
    });
    // ioredis bounds the TCP connect only: a server that accepts and never answers would hold the
    // handshake forever. Start over when it takes longer than the connect timeout.
    client.on('connect', () => {
      this.handshakeDone(client);
      const timer = setTimeout(() => {
        this.handshakeTimers.delete(client);
        this.lastError = new BackendError('redis', `${this.label}: no answer within ${this.settings.connectTimeoutMs} ms after connecting`);
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

function subscribe(subscriber: Redis, patterns: readonly string[], channels: readonly string[], handlers: SubscriptionHandlers): void {
  // Each on its own: a server whose ACL refuses one still delivers the other's messages.
  if (patterns.length > 0)
    subscriber.psubscribe(...patterns).then(
      () => handlers.listening(),
      () => undefined,
    );
  if (channels.length > 0)
    subscriber.subscribe(...channels).then(
      () => handlers.listening(),
      () => undefined,
    );
}
