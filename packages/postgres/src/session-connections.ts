import { untilAborted } from '@holdfast/core/backend';
import pg from 'pg';
import type { ListenerConfig } from './release-listener.js';
import { SocketSet } from './socket-set.js';
import { borrowConnection, cutConnection } from './sql-runner.js';

/** How long a dedicated connection nobody uses stays open for the next grant or wait. */
const IDLE_MS = 10_000;

/**
 * Session mode's dedicated connections, opened by the provider itself (with the app pool's settings
 * when it gave one, never taking the app's connections): one per held lock for as long as it is held,
 * and one per waiting acquire while it waits. A connection goes back for reuse only when it provably
 * holds nothing; any doubt (an error, an abort, an unlock that found nothing) and it is cut, which
 * makes the server drop whatever it held.
 */
export class SessionConnections {
  private readonly sockets = new SocketSet();
  private readonly pool: pg.Pool;

  constructor(config: ListenerConfig, connectTimeoutMs: number) {
    this.pool = new pg.Pool({
      ...config,
      // Bounded by the locks and waits the provider has, not by a pool size: a held lock keeps its connection.
      max: Number.POSITIVE_INFINITY,
      idleTimeoutMillis: IDLE_MS,
      connectionTimeoutMillis: connectTimeoutMs,
      stream: this.sockets.create,
      keepAlive: true,
    });
    // An idle connection that breaks is dropped by the pool; the next grant opens another.
    this.pool.on('error', () => undefined);
    // A connection taken out may break between two statements: a grant hears of it through its own
    // listener, and pg must not see an 'error' nobody listens to (it would throw).
    this.pool.on('connect', (client) => client.on('error', () => undefined));
  }

  take(signal: AbortSignal): Promise<pg.PoolClient> {
    return borrowConnection(this.pool, signal);
  }

  /**
   * One statement on `client`; when `signal` aborts first the connection is cut (its answer may never
   * come). With a `name` it is prepared once per connection and then only bound and run: planning a
   * statement as long as the grant costs more than running it.
   */
  async run<Row extends pg.QueryResultRow>(
    client: pg.PoolClient,
    text: string,
    values: readonly unknown[],
    signal: AbortSignal,
    name?: string,
  ): Promise<Row[]> {
    const query =
      name === undefined ? client.query<Row>(text, values as unknown[]) : client.query<Row>({ name, text, values: values as unknown[] });
    try {
      return (await untilAborted(query, signal)).rows;
    } catch (error) {
      if (signal.aborted) cutConnection(client);
      throw error;
    }
  }

  /** For a connection that holds nothing: kept for the next grant or wait. */
  giveBack(client: pg.PoolClient): void {
    client.release();
  }

  /** Cuts the connection: the server ends its session and frees any lock it held. */
  discard(client: pg.PoolClient): void {
    cutConnection(client);
    client.release(true);
  }

  /** Ends every connection; when `signal` aborts, cuts them at once. */
  async close(signal: AbortSignal): Promise<void> {
    const cutAll = (): void => this.sockets.destroyAll();
    if (signal.aborted) cutAll();
    signal.addEventListener('abort', cutAll, { once: true });
    try {
      await this.pool.end();
    } finally {
      signal.removeEventListener('abort', cutAll);
    }
  }
}
