import type { Redis } from 'ioredis';
import { IN_SCRIPTS, type ServerCounter } from './contention.js';

/**
 * Commands by name, from MONITOR on a connection of its own (a duplicate of `redis`): those clients sent, and (named with
 * IN_SCRIPTS) those scripts ran inside the server. MONITOR slows the server, so it runs only in the
 * counted slices. Only meaningful on the bench's own server: a shared one shows other clients' commands too.
 */
export function redisCommands(redis: Redis): ServerCounter {
  return {
    async start() {
      const counts = new Map<string, number>();
      const monitor = await redis.monitor();
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        const name = `${source === 'lua' ? IN_SCRIPTS : ''}${String(args[0]).toLowerCase()}`;
        counts.set(name, (counts.get(name) ?? 0) + 1);
      });
      return async () => {
        monitor.disconnect();
        return counts;
      };
    },
  };
}

async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const [, name, calls] of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    counts.set(name!, Number(calls));
  return counts;
}

/** Script calls (EVAL + EVALSHA) the server ran: each renewal is one. */
export async function scriptCalls(redis: Redis): Promise<number> {
  const counts = await commandStats(redis);
  return (counts.get('evalsha') ?? 0) + (counts.get('eval') ?? 0);
}

export async function usedMemory(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? Number.NaN);
}
