import { WaitList } from '@holdfast/core/backend';
import pg from 'pg';
import { cutConnection } from './sql-runner.js';
import { withTimeout } from './with-timeout.js';

/** Where the listener connects: the provider's URL, or the settings of the app's pool. */
export type ListenerConfig = Omit<pg.ClientConfig, 'connectionTimeoutMillis'>;

// How many keys' last release to remember, so a release that arrives between a busy answer and
// the wait that follows it is not missed. Older ones are forgotten; a wait that cannot tell retries.
const REMEMBERED_KEYS = 4096;
/** While not listening, waits come back this often, and a failed connection is retried no sooner. */
const LISTENER_RETRY_MS = 1000;

/**
 * One LISTEN connection per provider, whatever the number of waiters and holders, opened on the
 * first wait or grant. Releases NOTIFY the key; every waiter on that key is woken. A forced release
 * also tells the key's holders. While it is down (not yet connected, a lost connection, LISTEN
 * refused) waits fall back to their timeout, and (re)connecting wakes everyone, since any release
 * may have been missed meanwhile (a missed forced release is found by the holder's next renewal).
 */
export class ReleaseListener {
  private readonly waits = new WaitList<string>();
  /** Holders of a key, told the highest token a forced release of it freed (or that the listener closed). */
  private readonly forced = new WaitList<string, bigint | 'closed'>();
  private client: pg.Client | null = null;
  /** The connection being opened, so that close() can cut it. */
  private opening: pg.Client | null = null;
  private retryAfter = 0;
  private closed = false;
  /** Counts notifications and (re)connections: marks taken before the current connection are stale. */
  private seq = 0;
  private connectedAt = -1;
  private readonly lastRelease = new Map<string, number>();
  private forgottenUpTo = -1;

  constructor(
    private readonly config: ListenerConfig,
    private readonly channel: string,
    private readonly connectTimeoutMs: number,
  ) {}

  /** Taken before a grant attempt; -1 while not listening. */
  mark(): number {
    return this.client ? this.seq : -1;
  }

  /**
   * Resolves when `key` is released, after `timeoutMs`, or on abort. At once when a release of `key`
   * may have come since `mark` (before this wait could hear it).
   */
  async wait(key: string, mark: number, options: { signal: AbortSignal; timeoutMs: number }): Promise<void> {
    this.listen();
    if (this.client && this.mayHaveMissed(key, mark)) return;
    const timeoutMs = this.client ? options.timeoutMs : Math.min(options.timeoutMs, LISTENER_RETRY_MS);
    await this.waits.wait(key, { signal: options.signal, timeoutMs });
  }

  /**
   * Resolves with the highest token a forced release of `key` freed (every holder with a token up to
   * it lost the key), undefined after `timeoutMs` or on abort, 'closed' once the provider closes.
   * Opens the LISTEN connection if need be; a notice sent while it is down is missed (the holder's
   * next renewal finds out instead).
   */
  forcedRelease(key: string, options: { signal: AbortSignal; timeoutMs: number }): Promise<bigint | 'closed' | undefined> {
    if (this.closed) return Promise.resolve('closed');
    this.listen();
    return this.forced.wait(key, options);
  }

  private mayHaveMissed(key: string, mark: number): boolean {
    if (mark < this.connectedAt) return true;
    const last = this.lastRelease.get(key);
    return last !== undefined ? last > mark : this.forgottenUpTo > mark;
  }

  private listen(): void {
    if (this.client || this.opening || this.closed || Date.now() < this.retryAfter) return;
    const client = new pg.Client({ ...this.config, connectionTimeoutMillis: this.connectTimeoutMs, keepAlive: true });
    this.opening = client;
    void this.connect(client).finally(() => (this.opening = null));
  }

  private async connect(client: pg.Client): Promise<void> {
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      if (message.channel !== this.channel || message.payload === undefined) return;
      // A forced release sends "<key>\u0001<token>"; keys never contain control characters.
      const [key, bound] = message.payload.split('\u0001');
      this.released(key!);
      if (bound !== undefined) this.forced.wakeAll(key!, BigInt(bound));
    });
    try {
      await withTimeout(client.connect(), this.connectTimeoutMs, 'connect');
      await withTimeout(client.query(`LISTEN "${this.channel}"`), this.connectTimeoutMs, 'LISTEN');
    } catch {
      cutConnection(client);
      this.retryAfter = Date.now() + LISTENER_RETRY_MS;
      return;
    }
    if (this.closed) return cutConnection(client);
    this.client = client;
    this.connectedAt = ++this.seq;
    this.waits.wakeEveryone();
  }

  private released(key: string): void {
    this.seq++;
    this.lastRelease.delete(key);
    this.lastRelease.set(key, this.seq);
    if (this.lastRelease.size > REMEMBERED_KEYS) {
      const [oldest, at] = this.lastRelease.entries().next().value!;
      this.lastRelease.delete(oldest);
      this.forgottenUpTo = at;
    }
    this.waits.wakeAll(key);
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    cutConnection(client);
    this.waits.wakeEveryone();
  }

  /** Ends the LISTEN connection; waiters are woken (their next attempt sees the provider closed). */
  async close(signal: AbortSignal): Promise<void> {
    this.closed = true;
    if (this.opening) cutConnection(this.opening);
    const client = this.client;
    this.client = null;
    this.waits.wakeEveryone();
    this.forced.wakeEveryone('closed');
    if (!client) return;
    const cut = (): void => cutConnection(client);
    signal.addEventListener('abort', cut, { once: true });
    try {
      await client.end();
    } catch {
      // ending a broken connection: nothing left to do
    } finally {
      signal.removeEventListener('abort', cut);
    }
  }
}
