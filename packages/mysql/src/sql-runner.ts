import type { Socket } from 'node:net';
import { BackendError } from '@holdfast/core';
import { CutConnections, untilAborted } from '@holdfast/core/backend';
import type { Pool, PoolConnection, ResultSetHeader } from 'mysql2';

export type Row = Record<string, unknown>;

/** Runs one statement on the borrowed connection: rows for a SELECT, the OK header otherwise. */
export type Run = <Result extends Row[] | ResultSetHeader>(sql: string, values: readonly unknown[]) => Promise<Result>;

/** SERVER_STATUS_IN_TRANS in the OK packet: the statement ran inside a transaction that is still open. */
const IN_TRANSACTION = 0x0001;
const ignore = (): void => undefined;

/**
 * Borrows a connection for one operation's statements, sent back to back, and gives it back: no
 * pooled connection is held while anything else is awaited. Bounded by the caller's signal: on
 * abort the connection is cut (its answer can no longer be trusted to arrive), never returned.
 */
export class SqlRunner {
  private readonly borrowed = new Set<PoolConnection>();
  private readonly cut = new CutConnections();

  constructor(
    private readonly pool: Pool,
    /** Our own pool's sockets; null for an app's pool, which close() leaves open. */
    private readonly ownSockets: Set<Socket> | null,
  ) {}

  withConnection<T>(signal: AbortSignal, work: (run: Run) => Promise<T>): Promise<T> {
    return this.borrowFor(signal, work, true);
  }

  /** Resolves once every statement this runner cut off has ended on the server (see CutConnections); an undo of an abandoned write waits for it. */
  cutStatementsSettled(signal: AbortSignal): Promise<void> {
    return this.cut.settled(async (ids, bounded) => {
      // Only reads: one of these cut off need not be waited for.
      const sql = 'SELECT ID AS id FROM information_schema.PROCESSLIST WHERE ID IN (?)';
      const rows = await this.borrowFor(bounded, (run) => run<Row[]>(sql, [ids]), false);
      return rows.map((row) => Number(row.id));
    }, signal);
  }

  private async borrowFor<T>(signal: AbortSignal, work: (run: Run) => Promise<T>, waitForCut: boolean): Promise<T> {
    signal.throwIfAborted();
    const connecting = borrow(this.pool);
    const connection = await untilAborted(connecting, signal).catch((error: unknown) => {
      // Connected after all, too late: give it straight back.
      if (signal.aborted) connecting.then((late) => late.release(), ignore);
      throw error;
    });
    this.borrowed.add(connection);
    let broken = false;
    // One abort listener per borrowed connection, not one per statement.
    let onAbort!: () => void;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => {
        broken = true;
        if (waitForCut) this.cut.add(connection.threadId);
        reject(signal.reason);
      };
    });
    aborted.catch(ignore);
    signal.addEventListener('abort', onAbort, { once: true });
    const run: Run = async (sql, values) => {
      const result = await Promise.race([statement(connection, sql, values), aborted]);
      if (!Array.isArray(result) && result.serverStatus & IN_TRANSACTION) {
        broken = true;
        throw openTransaction();
      }
      return result as never;
    };
    try {
      return await work(run);
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.borrowed.delete(connection);
      if (broken) cut(connection);
      else connection.release();
    }
  }

  /** Ends our own pool (an app's is left open); when `signal` aborts, cuts every connection at once. */
  async close(signal: AbortSignal): Promise<void> {
    const cutAll = (): void => {
      for (const connection of this.borrowed) cut(connection);
      for (const socket of this.ownSockets ?? []) socket.destroy();
    };
    if (signal.aborted) cutAll();
    signal.addEventListener('abort', cutAll, { once: true });
    try {
      if (this.ownSockets) await untilAborted(new Promise<void>((resolve) => this.pool.end(() => resolve())), signal).catch(ignore);
    } finally {
      signal.removeEventListener('abort', cutAll);
    }
  }
}

function borrow(pool: Pool): Promise<PoolConnection> {
  return new Promise((resolve, reject) => pool.getConnection((error, connection) => (error ? reject(error) : resolve(connection))));
}

/** Plain rows and `?` placeholders whatever the app's pool is configured with. */
function statement(connection: PoolConnection, sql: string, values: readonly unknown[]): Promise<Row[] | ResultSetHeader> {
  const options = { sql, values: values as unknown[], rowsAsArray: false, nestTables: false, namedPlaceholders: false };
  return new Promise((resolve, reject) => {
    connection.query(options, (error, result) => (error ? reject(error) : resolve(result as Row[] | ResultSetHeader)));
  });
}

/**
 * With autocommit off (or a transaction the app left open) our writes would hold their row locks
 * until someone commits: every other grant of the key would wait. Cutting the connection makes the
 * server roll it back.
 */
function openTransaction(): BackendError {
  return new BackendError(
    'mysql',
    'a pooled connection ran the statement inside an open transaction: the pool must use autocommit (the server default)',
  );
}

/** Destroys the connection's socket (mysql2's destroy() only half-closes it); its late errors are expected. */
function cut(connection: PoolConnection): void {
  connection.on('error', ignore);
  connection.destroy();
  (connection as unknown as { stream?: { destroy(): void } }).stream?.destroy();
}
