import { redisServerBinary } from './binaries.js';
import { makeTempDir, removeTempDir } from './cleanup.js';
import { freePort, freePorts, retryOnPortClash } from './ports.js';
import { redisPing } from './probes.js';
import { type ManagedProcess, spawnServer } from './process.js';
import { waitUntilReady } from './wait.js';

export interface RedisSet {
  urls: string[];
  /** SIGKILL instance i (its data is gone: nothing is persisted). */
  kill(i: number): Promise<void>;
  /** Start instance i again on the same port, empty. */
  restart(i: number): Promise<void>;
  stop(): Promise<void>;
}

async function requireRedisServer(): Promise<string> {
  const bin = await redisServerBinary();
  if (!bin) throw new Error('redis-server not found on PATH; run `npm run servers:install` (apt-get install redis-server)');
  return bin;
}

async function launch(bin: string, port: number, dir: string): Promise<ManagedProcess> {
  const proc = spawnServer(`redis-server:${port}`, bin, [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'no',
    '--dir',
    dir,
    '--logfile',
    '',
  ]);
  await waitUntilReady(proc, 'PING', () => redisPing('127.0.0.1', port), 15_000);
  return proc;
}

/** One redis-server on a free loopback port, nothing persisted. */
export async function startRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const set = await retryOnPortClash(async () => startRedisSetOn([await freePort()]));
  return { url: set.urls[0]!, stop: () => set.stop() };
}

/** n independent redis-server instances (for quorum locks), each on its own free port. */
export async function startRedisSet(n: number): Promise<RedisSet> {
  return retryOnPortClash(async () => startRedisSetOn(await freePorts(n)));
}

async function startRedisSetOn(ports: number[]): Promise<RedisSet> {
  const bin = await requireRedisServer();
  const dir = makeTempDir('redis');
  const procs: (ManagedProcess | undefined)[] = [];
  const stopAll = async (): Promise<void> => {
    await Promise.all(procs.map((p) => p?.stop()));
    removeTempDir(dir);
  };
  try {
    for (const port of ports) procs.push(await launch(bin, port, dir));
  } catch (err) {
    await stopAll();
    throw err;
  }
  const at = (i: number): number => {
    if (i < 0 || i >= ports.length) throw new RangeError(`no redis instance ${i}`);
    return ports[i]!;
  };
  return {
    urls: ports.map((p) => `redis://127.0.0.1:${p}`),
    kill: async (i) => {
      at(i);
      await procs[i]?.kill();
      procs[i] = undefined;
    },
    restart: async (i) => {
      const port = at(i);
      await procs[i]?.stop();
      procs[i] = await launch(bin, port, dir);
    },
    stop: stopAll,
  };
}
