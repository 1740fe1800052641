import { Redis, type RedisOptions } from 'ioredis';
import { QuietSentinelConnector } from './quiet-sentinel-connector.js';

export interface NodeSettings {
  /** The database to SELECT; checked on every connection, never silently left at 0. */
  readonly db: number;
  /** Per-command time limit (0: none). */
  readonly commandTimeoutMs: number;
  /** Longest time from opening a connection to a usable one (TCP, handshake, SELECT). */
  readonly connectTimeoutMs: number;
}

/**
 * Connection settings that make a failing server fail fast: no offline queue, no resending of
 * commands that were in flight when a connection dropped (a late grant would be an orphan lock),
 * a bounded connect and command time. Reconnection continues in the background until close().
 * The db is left out: ioredis would SELECT it, ignore a refusal and go on in db 0. Subscriptions
 * are renewed by their owner, which must know when they are active again.
 */
export function failFastClient(base: RedisOptions, settings: NodeSettings, commandTimeoutMs: number): Redis {
  const { db: _ignored, ...rest } = base;
  return new Redis({
    connectTimeout: settings.connectTimeoutMs,
    // Behind Sentinels: a Sentinel that hangs is given up like a data node; passes over them are
    // retried as reconnections are (a null strategy would end the client for good).
    ...(base.sentinels
      ? {
          sentinelRetryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
          sentinelCommandTimeout: settings.connectTimeoutMs,
          Connector: QuietSentinelConnector,
        }
      : {}),
    ...rest,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: false,
    // ioredis treats a commandTimeout of 0 as "time out at once"; 0 here means no limit.
    ...(commandTimeoutMs ? { commandTimeout: commandTimeoutMs } : {}),
    retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
    // How long ioredis waits for the server's side of a close before destroying the socket (default
    // 2 s, on a ref'd timer): a hung server never answers, and the timer kept processes alive after close().
    ...({ disconnectTimeout: 100 } as RedisOptions),
  });
}

/**
 * ioredis arms a timer of `commandTimeoutMs` per command and clears it at the answer. Node keeps one
 * list per duration and drops it when its last timer goes, so with one command in flight at a time
 * every command built and tore down that list (a priority-queue insert and removal, a libuv timer
 * start): 4 us of client CPU per grant and release on an idle machine. An unref'd interval of the
 * same duration keeps the list, and each command's timer is then a linked-list append. Cleared by `close`.
 */
export function keepTimerListFor(commandTimeoutMs: number): { close(): void } {
  if (!commandTimeoutMs) return { close: () => undefined };
  const anchor = setInterval(() => undefined, commandTimeoutMs).unref();
  return { close: () => clearInterval(anchor) };
}

/** Polite QUIT when connected. */
export async function quit(client: Redis): Promise<void> {
  if (client.status === 'ready') await client.quit().catch(() => undefined);
}

/**
 * Closes the socket at once; ioredis then reconnects unless disconnect() was called. Its own
 * disconnect() half-closes and keeps a timer running for 2 s for the server's side of the close,
 * which a hung server never sends.
 */
export function dropSocket(client: Redis): void {
  (client.stream as { destroy?: () => void } | undefined)?.destroy?.();
}
