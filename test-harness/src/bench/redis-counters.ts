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
      const monitor = await monitorOf(redis);
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        const name = `${source === 'lua' ? IN_SCRIPTS : ''}${String(args[0]).toLowerCase()}`;
        counts.set(name, (counts.get(name) ?? 0) + 1);
      });
      return async () => {
        monitor.disconnect();
        return counts;
      };
    },
    cpuMicros: () => serverCpuMicros(redis),
  };
}

/** used_cpu_user + used_cpu_sys of INFO cpu (seconds, to the microsecond), in µs. */
export async function serverCpuMicros(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const seconds = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  return Math.round((seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6);
}

/**
 * `redis.monitor()`, with an error listener from the start: ioredis marks the connection as monitoring
 * one microtask after MONITOR's reply, and a line that comes in the same read (a busy server: waiters
 * refreshing their queue entries) is then a "Command queue state error" with nobody to catch it. Such
 * a line is not counted; the count starts with the connection's "monitoring".
 */
function monitorOf(redis: Redis): Promise<Redis> {
  const monitor = redis.duplicate({ monitor: true, lazyConnect: false });
  let failure: unknown;
  monitor.on('error', (error: unknown) => {
    failure ??= error;
  });
  return new Promise((resolve, reject) => {
    monitor.once('monitoring', () => resolve(monitor));
    monitor.once('end', () => reject(failure ?? new Error('the MONITOR connection closed')));
  });
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
