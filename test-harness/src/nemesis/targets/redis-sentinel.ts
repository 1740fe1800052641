import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { onPath, redisServerBinary } from '../../servers/binaries.js';
import { makeTempDir, removeTempDir } from '../../servers/cleanup.js';
import { spawnServer } from '../../servers/process.js';
import { infoFields } from '../../servers/redis-cli.js';
import type { NetworkRig } from '../network.js';
import type { NemesisTarget } from '../types.js';
import { runIn } from './in-namespace.js';
import { ServerProcesses } from './server-processes.js';

const PORT = 6379;
const SENTINEL_PORT = 26379;
const HOSTS = ['r0', 'r1', 'r2'];
const NAME = 'mymaster';
/** As in the harness's Sentinel test servers: a failover within seconds, none spurious on a loaded machine. */
const DOWN_AFTER_MS = 2000;

/**
 * Three hosts, each with a Redis data node and a Sentinel (quorum 2), as Sentinel is usually deployed:
 * r0 starts as primary, r1 and r2 replicate it. Nothing is persisted and `min-replicas-to-write` is not
 * set (Redis's defaults): a primary cut off with some clients keeps answering them, which is what the
 * scenarios measure. Workers find the primary through the Sentinels, as an application does.
 */
export function redisSentinelTarget(): NemesisTarget {
  let rig: NetworkRig | undefined;
  let dir: string | undefined;
  const servers = new ServerProcesses();
  const address = (host: string): string => rig!.addressOf(host);
  let cli = '';
  const ask = async (host: string, port: number, args: string[]): Promise<string | null> => {
    const { code, stdout } = await runIn(rig!, host, cli, ['-h', address(host), '-p', String(port), ...args], 2000);
    return code === 0 ? stdout : null;
  };
  /** The host a Sentinel names as primary, or null. */
  const primarySeenBy = async (host: string): Promise<string | null> => {
    const answer = await ask(host, SENTINEL_PORT, ['sentinel', 'get-master-addr-by-name', NAME]);
    const ip = answer?.trim().split('\n')[0];
    return HOSTS.find((h) => address(h) === ip) ?? null;
  };
  return {
    backend: 'redis-sentinel',
    serverHosts: HOSTS,
    async start(network: NetworkRig) {
      rig = network;
      const bin = await redisServerBinary();
      const sentinel = onPath('redis-sentinel');
      if (!bin || !sentinel) throw new Error('redis-server or redis-sentinel not found; run `npm run servers:install`');
      cli = join(dirname(bin), 'redis-cli');
      dir = makeTempDir('nemesis-redis-sentinel');
      for (const host of HOSTS) {
        const replicaOf = host === HOSTS[0] ? [] : ['--replicaof', address(HOSTS[0]!), String(PORT)];
        const data = ['--bind', address(host), '--port', String(PORT), '--protected-mode', 'no', '--dir', dir];
        const [cmd, argv] = rig.commandIn(host, bin, [
          ...data,
          '--save',
          '',
          '--appendonly',
          'no',
          '--dbfilename',
          `${host}.rdb`,
          ...replicaOf,
        ]);
        servers.add(spawnServer(`nemesis-redis-${host}`, cmd, argv));
        // Sentinel rewrites its file with what it learns: one each.
        const conf = join(dir, `sentinel-${host}.conf`);
        writeFileSync(
          conf,
          [
            `port ${SENTINEL_PORT}`,
            `bind ${address(host)}`,
            'protected-mode no',
            `dir ${dir}`,
            `sentinel monitor ${NAME} ${address(HOSTS[0]!)} ${PORT} 2`,
            `sentinel down-after-milliseconds ${NAME} ${DOWN_AFTER_MS}`,
            `sentinel failover-timeout ${NAME} 10000`,
            `sentinel parallel-syncs ${NAME} 2`,
            '',
          ].join('\n'),
        );
        const [scmd, sargv] = rig.commandIn(host, sentinel, [conf]);
        servers.add(spawnServer(`nemesis-sentinel-${host}`, scmd, sargv));
      }
      await servers.waitUntil(
        'every Sentinel to name r0 and know both replicas, and r0 to have both in sync',
        async () => {
          const views = await Promise.all(HOSTS.map((host) => primarySeenBy(host)));
          if (views.some((view) => view !== HOSTS[0])) return false;
          const replicas = await Promise.all(HOSTS.map((host) => ask(host, SENTINEL_PORT, ['sentinel', 'replicas', NAME])));
          // One `name` field per replica in the reply.
          if (replicas.some((answer) => (answer?.match(/^name$/gm) ?? []).length !== 2)) return false;
          const info = infoFields((await ask(HOSTS[0]!, PORT, ['info', 'replication'])) ?? '');
          return info.get('role') === 'master' && Number(info.get('connected_slaves') ?? 0) === 2;
        },
        60_000,
      );
    },
    urlFor: () => `redis+sentinel://${HOSTS.map((host) => `${address(host)}:${SENTINEL_PORT}`).join(',')}/${NAME}`,
    async leader() {
      for (const host of HOSTS) {
        const seen = await primarySeenBy(host);
        if (seen) return seen;
      }
      throw new Error('no Sentinel names a primary');
    },
    async stop() {
      await servers.stopAll();
      if (dir) removeTempDir(dir);
    },
  };
}
