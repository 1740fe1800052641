import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { onPath, redisServerBinary } from './binaries.js';
import { makeTempDir, removeTempDir } from './cleanup.js';
import { freePorts, retryOnPortClash } from './ports.js';
import { redisPing } from './probes.js';
import { type ManagedProcess, spawnServer } from './process.js';
import { infoFields, redisCli, signalProcess } from './redis-cli.js';
import { pollUntil, waitUntilReady } from './wait.js';

export interface RedisSentinelServers {
  /** `redis+sentinel://127.0.0.1:a,127.0.0.1:b,127.0.0.1:c/mymaster`. */
  url: string;
  /** The name the Sentinels monitor. */
  name: string;
  /** The data nodes' ports (the first starts as primary) and the Sentinels' ports. */
  dataPorts: number[];
  sentinelPorts: number[];
  /** down-after-milliseconds the Sentinels run with. */
  downAfterMs: number;
  /** The port the Sentinels name as primary now. */
  primary(): Promise<number>;
  /** SIGKILL a data node (its data is gone). */
  kill(port: number): Promise<void>;
  /** Start a killed data node again, as a replica of the current primary. */
  restart(port: number): Promise<void>;
  pause(port: number): void;
  resume(port: number): void;
  /** SENTINEL FAILOVER: a replica promoted without agreement, the old primary demoted. */
  failover(): Promise<void>;
  /** Until the Sentinels agree on a live primary that has a replica in sync. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const NAME = 'mymaster';
// As for the Cluster: a failover within seconds, no spurious one on a loaded machine.
const DOWN_AFTER_MS = 2000;

function dataArgs(port: number, dir: string, primaryPort: number | null): string[] {
  return [
    ...['--port', String(port), '--bind', '127.0.0.1', '--daemonize', 'no', '--dir', dir, '--logfile', ''],
    ...['--save', '', '--appendonly', 'no', '--dbfilename', `dump-${port}.rdb`],
    ...['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'],
    ...(primaryPort === null ? [] : ['--replicaof', '127.0.0.1', String(primaryPort)]),
  ];
}

function sentinelConf(port: number, dir: string, primaryPort: number): string {
  return [
    `port ${port}`,
    'bind 127.0.0.1',
    'daemonize no',
    `dir ${dir}`,
    `sentinel monitor ${NAME} 127.0.0.1 ${primaryPort} 2`,
    `sentinel down-after-milliseconds ${NAME} ${DOWN_AFTER_MS}`,
    `sentinel failover-timeout ${NAME} 10000`,
    `sentinel parallel-syncs ${NAME} 1`,
    '',
  ].join('\n');
}

/** A primary, one replica and three Sentinels (quorum 2) on free loopback ports, nothing persisted. */
export async function startRedisSentinel(): Promise<RedisSentinelServers> {
  return retryOnPortClash(async () => startOn(await freePorts(5)));
}

async function startOn(ports: number[]): Promise<RedisSentinelServers> {
  const server = await redisServerBinary();
  const sentinel = onPath('redis-sentinel');
  if (!server || !sentinel) throw new Error('redis-server or redis-sentinel not on PATH; run `npm run servers:install`');
  const dataPorts = ports.slice(0, 2);
  const sentinelPorts = ports.slice(2);
  const dir = makeTempDir('redis-sentinel');
  const procs = new Map<number, ManagedProcess>();
  const stopAll = async (): Promise<void> => {
    for (const p of procs.values()) signalProcess(p.pid, 'SIGCONT');
    await Promise.all([...procs.values()].map((p) => p.stop()));
    procs.clear();
    removeTempDir(dir);
  };
  const launch = async (port: number, command: string, args: string[]): Promise<void> => {
    const proc = spawnServer(`redis:${port}`, command, args);
    procs.set(port, proc);
    await waitUntilReady(proc, 'PING', () => redisPing('127.0.0.1', port), 15_000);
  };
  const askSentinels = async (args: string[]): Promise<string> => {
    let lastError: unknown;
    for (const port of sentinelPorts) {
      try {
        return await redisCli(port, args, 1000);
      } catch (err) {
        lastError = err;
      }
    }
    throw new Error(`no Sentinel answers ${args.join(' ')}: ${String(lastError)}`);
  };
  const primary = async (): Promise<number> => {
    const [, port] = (await askSentinels(['sentinel', 'get-master-addr-by-name', NAME])).trim().split('\n');
    return Number(port);
  };
  const waitHealthy = async (timeoutMs = 30_000): Promise<void> => {
    await pollUntil(
      'the Sentinels agree on a live primary with a replica in sync',
      async () => {
        const answers = await Promise.all(sentinelPorts.map((p) => redisCli(p, ['sentinel', 'get-master-addr-by-name', NAME], 1000)));
        if (new Set(answers.map((a) => a.trim())).size !== 1) return false;
        const port = await primary();
        if (!procs.has(port)) return false;
        const info = infoFields(await redisCli(port, ['info', 'replication'], 1000));
        return info.get('role') === 'master' && Number(info.get('connected_slaves') ?? 0) >= 1;
      },
      timeoutMs,
    );
  };
  try {
    await launch(dataPorts[0]!, server, dataArgs(dataPorts[0]!, dir, null));
    await launch(dataPorts[1]!, server, dataArgs(dataPorts[1]!, dir, dataPorts[0]!));
    for (const port of sentinelPorts) {
      const conf = join(dir, `sentinel-${port}.conf`);
      writeFileSync(conf, sentinelConf(port, dir, dataPorts[0]!));
      await launch(port, sentinel, [conf]);
    }
    await waitHealthy();
  } catch (err) {
    await stopAll();
    throw err;
  }
  const known = (port: number): ManagedProcess | undefined => {
    if (!dataPorts.includes(port)) throw new RangeError(`no data node on port ${port}`);
    return procs.get(port);
  };
  return {
    url: `redis+sentinel://${sentinelPorts.map((p) => `127.0.0.1:${p}`).join(',')}/${NAME}`,
    name: NAME,
    dataPorts,
    sentinelPorts,
    downAfterMs: DOWN_AFTER_MS,
    primary,
    kill: async (port) => {
      await known(port)?.kill();
      procs.delete(port);
    },
    restart: async (port) => {
      const old = known(port);
      if (old) {
        signalProcess(old.pid, 'SIGCONT');
        await old.stop();
      }
      await launch(port, server, dataArgs(port, dir, await primary()));
    },
    pause: (port) => signalProcess(known(port)?.pid, 'SIGSTOP'),
    resume: (port) => signalProcess(known(port)?.pid, 'SIGCONT'),
    failover: async () => {
      const before = await primary();
      await askSentinels(['sentinel', 'failover', NAME]);
      await pollUntil('the Sentinels name a new primary', async () => (await primary()) !== before, 30_000);
    },
    waitHealthy,
    stop: stopAll,
  };
}
