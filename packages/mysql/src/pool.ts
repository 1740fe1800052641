import { connect, type Socket } from 'node:net';
import mysql, { type Pool, type PoolOptions } from 'mysql2';
import type { Pool as PromisePool } from 'mysql2/promise';

export interface OpenedPool {
  readonly pool: Pool;
  /** The sockets of our own pool's connections; null for the app's pool, which close() leaves open. */
  readonly sockets: Set<Socket> | null;
}

/** The app's pool (mysql2 or mysql2/promise) as it is, or a pool of our own; connects lazily either way. */
export function openPool(appPool: Pool | PromisePool | undefined, connection: PoolOptions): OpenedPool {
  if (appPool) return { pool: callbackPool(appPool), sockets: null };
  const sockets = new Set<Socket>();
  const pool = mysql.createPool({
    ...connection,
    // Our own sockets, so that close() can cut them when the server does not answer: mysql2's own
    // end() and destroy() wait for the server to close its side.
    stream: ({ config }: { config: PoolOptions }) => {
      const socket = config.socketPath ? connect(config.socketPath) : connect(config.port ?? 3306, config.host ?? 'localhost');
      socket.setNoDelay(true).setKeepAlive(true, 10_000);
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      return socket;
    },
    // Tokens and fence values are BIGINT UNSIGNED: never rounded through a double.
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
  return { pool, sockets };
}

/** mysql2/promise pools wrap the callback pool this adapter drives. */
function callbackPool(pool: Pool | PromisePool): Pool {
  const inner = (pool as { pool?: Pool }).pool;
  return typeof inner?.getConnection === 'function' ? inner : (pool as Pool);
}
