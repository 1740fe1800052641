import type { Redis } from 'ioredis';

/** ioredis, loaded when a Redis bench first needs it so that the other benches run without it. */
export async function redisConnector(): Promise<(url: string) => Redis> {
  const { Redis: RedisClient } = await import('ioredis');
  return (url) => new RedisClient(url);
}

/** Closes connections without waiting on a server that may be gone. */
export async function quitAll(connections: readonly Redis[]): Promise<void> {
  await Promise.allSettled(connections.map((connection) => connection.quit()));
}
