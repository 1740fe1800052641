import pg from 'pg';
import type { ListenerConfig } from './release-listener.js';
import type { Settings } from './settings.js';
import { SocketSet } from './socket-set.js';

export interface OpenedPool {
  readonly pool: pg.Pool;
  /** Our own pool's sockets, null for the app's pool. */
  readonly sockets: SocketSet | null;
  /** How the connections outside the pool (LISTEN, session mode's) connect: the same server and credentials as the pool. */
  readonly clientConfig: ListenerConfig;
}

/** The app's pool as it is, or a pool of our own from the URL; connects lazily either way. */
export function openPool(appPool: pg.Pool | undefined, settings: Settings): OpenedPool {
  if (appPool) return { pool: appPool, sockets: null, clientConfig: clientSettingsOf(appPool) };
  const sockets = new SocketSet();
  const pool = new pg.Pool({
    connectionString: settings.connectionString,
    connectionTimeoutMillis: settings.connectTimeoutMs,
    stream: sockets.create,
    keepAlive: true,
  });
  // An idle connection that breaks (a server restart) is dropped by the pool; the next statement opens another.
  pool.on('error', () => undefined);
  return { pool, sockets, clientConfig: { connectionString: settings.connectionString } };
}

/** The connection settings of an app's pool, without its pool-only ones. */
function clientSettingsOf(pool: pg.Pool): ListenerConfig {
  const {
    max: _max,
    min: _min,
    idleTimeoutMillis: _idle,
    maxUses: _uses,
    allowExitOnIdle: _exit,
    maxLifetimeSeconds: _life,
    log: _log,
    Client: _client,
    connectionTimeoutMillis: _timeout,
    ...client
  } = pool.options as pg.PoolOptions & { Client?: unknown; maxLifetimeSeconds?: unknown };
  return client;
}
