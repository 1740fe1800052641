import { CutConnections, untilAborted } from '@holdfast/core/backend';
import type { Pool, PoolClient, QueryResultRow } from 'pg';
import type { SocketSet } from './socket-set.js';

const ignore = (): void => undefined;

/**
 * Runs one statement at a time on a pool: borrow a connection, run, give it back, so no pooled
 * connection is held across the caller's awaits. Every statement is bounded by the caller's signal:
 * on abort the connection is cut (its answer can no longer be trusted to arrive), not returned.
 */
export class SqlRunner {
  private readonly borrowed = new Set<PoolClient>();
  private readonly cut = new CutConnections();

  constructor(
    readonly pool: Pool,
    /** Our own pool's sockets; null for an app's pool, which close() leaves open. */
    private readonly ownSockets: SocketSet | null,
  ) {}

  query<Row extends QueryResultRow>(text: string, values: readonly unknown[], signal: AbortSignal): Promise<Row[]> {
    return this.run<Row>(text, values, signal, true);
  }

  /** Resolves once every statement this runner cut off has ended on the server (see CutConnections); an undo of an abandoned write waits for it. */
  cutStatementsSettled(signal: AbortSignal): Promise<void> {
    return this.cut.settled(async (pids, bounded) => {
      // Only reads: one of these cut off need not be waited for.
      const rows = await this.run<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE pid = ANY($1::int[])', [pids], bounded, false);
      return rows.map((row) => row.pid);
    }, signal);
  }

  private async run<Row extends QueryResultRow>(
    text: string,
    values: readonly unknown[],
    signal: AbortSignal,
    waitForCut: boolean,
  ): Promise<Row[]> {
    const client = await borrowConnection(this.pool, signal);
    this.borrowed.add(client);
    // A connection that breaks while borrowed (a server crash) reports it on the client too.
    let broken = false;
    const onError = (): void => void (broken = true);
    client.on('error', onError);
    try {
      const result = await untilAborted(client.query<Row>(text, values as unknown[]), signal);
      return result.rows;
    } catch (error) {
      // Aborted: the answer may never come, so the connection cannot be reused.
      if (signal.aborted) {
        broken = true;
        if (waitForCut) this.cut.add((client as unknown as { processID?: number | null }).processID);
      }
      throw error;
    } finally {
      this.borrowed.delete(client);
      client.off('error', onError);
      if (broken) cutConnection(client);
      client.release(broken);
    }
  }

  /** Ends our own pool (an app's is left open); when `signal` aborts, cuts every connection at once. */
  async close(signal: AbortSignal): Promise<void> {
    const cutAll = (): void => {
      for (const client of this.borrowed) cutConnection(client);
      this.ownSockets?.destroyAll();
    };
    if (signal.aborted) cutAll();
    signal.addEventListener('abort', cutAll, { once: true });
    try {
      if (this.ownSockets) await this.pool.end();
    } finally {
      signal.removeEventListener('abort', cutAll);
    }
  }
}

/** A connection from `pool`, bounded by `signal`; one that connects after the abort goes straight back. */
export async function borrowConnection(pool: Pool, signal: AbortSignal): Promise<PoolClient> {
  signal.throwIfAborted();
  const connecting = pool.connect();
  return untilAborted(connecting, signal).catch((error: unknown) => {
    if (signal.aborted) connecting.then((late) => late.release(), ignore);
    throw error;
  });
}

/** Destroys the socket under a pg client; the client's late 'error' for it is expected and ignored. */
export function cutConnection(client: {
  connection: { stream: { destroy(): void } };
  on(event: 'error', listener: () => void): unknown;
}): void {
  client.on('error', ignore);
  client.connection.stream.destroy();
}
