import { dirname, join } from 'node:path';
import { redisServerBinary } from '../../servers/binaries.js';
import { makeTempDir, removeTempDir } from '../../servers/cleanup.js';
import { spawnServer } from '../../servers/process.js';
import { infoFields } from '../../servers/redis-cli.js';
import { parseClusterNodes } from '../../servers/redis-cluster.js';
import type { NetworkRig } from '../network.js';
import type { NemesisTarget } from '../types.js';
import { runIn } from './in-namespace.js';
import { ServerProcesses } from './server-processes.js';

const PORT = 6379;
/** One node per host, so that a split can put one primary alone with a holder. */
const HOSTS = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5'];
/** As in the harness's Cluster test servers: a failover within seconds, none spurious on a loaded machine. */
const NODE_TIMEOUT_MS = 2000;
/** The adapter's default prefix: the Redis key of a Holdfast key, whose slot decides its primary. */
const LOCK_KEY_PREFIX = 'holdfast:';

/**
 * A Redis Cluster of 3 primaries and 3 replicas (one each), one node per host, as `redis-cli --cluster
 * create --cluster-replicas 1` lays it out. Nothing persisted, `cluster-node-timeout` 2 s, and no
 * `min-replicas-to-write` (Redis's defaults). Workers reach it through every node as a seed, as an
 * application does; `serverOf(key)` names the primary of a key's slot, for a split to cut it off.
 */
export function redisClusterTarget(): NemesisTarget {
  let rig: NetworkRig | undefined;
  let dir: string | undefined;
  const servers = new ServerProcesses();
  const address = (host: string): string => rig!.addressOf(host);
  let cli = '';
  const ask = async (host: string, args: string[], timeoutMs = 2000): Promise<string | null> => {
    const { code, stdout } = await runIn(rig!, host, cli, ['-h', address(host), '-p', String(PORT), ...args], timeoutMs);
    return code === 0 ? stdout : null;
  };
  /** CLUSTER NODES from the first node that answers. */
  const nodes = async () => {
    for (const host of HOSTS) {
      const answer = await ask(host, ['cluster', 'nodes']);
      if (answer) return parseClusterNodes(answer);
    }
    throw new Error('no Cluster node answers CLUSTER NODES');
  };
  const hostAt = (ip: string): string | undefined => HOSTS.find((host) => address(host) === ip);
  return {
    backend: 'redis-cluster',
    serverHosts: HOSTS,
    async start(network: NetworkRig) {
      rig = network;
      const bin = await redisServerBinary();
      if (!bin) throw new Error('redis-server not found; run `npm run servers:install`');
      cli = join(dirname(bin), 'redis-cli');
      dir = makeTempDir('nemesis-redis-cluster');
      for (const host of HOSTS) {
        const [cmd, argv] = rig.commandIn(host, bin, [
          ...['--bind', address(host), '--port', String(PORT), '--protected-mode', 'no', '--dir', dir],
          ...['--save', '', '--appendonly', 'no', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${host}.conf`],
          ...['--cluster-node-timeout', String(NODE_TIMEOUT_MS), '--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'],
        ]);
        servers.add(spawnServer(`nemesis-redis-cluster-${host}`, cmd, argv));
      }
      await servers.waitUntil(
        'every Cluster node to answer PING',
        async () => {
          const answers = await Promise.all(HOSTS.map((host) => ask(host, ['ping'])));
          return answers.every((answer) => answer?.trim() === 'PONG');
        },
        30_000,
      );
      const create = await runIn(
        rig,
        HOSTS[0]!,
        cli,
        ['--cluster', 'create', ...HOSTS.map((host) => `${address(host)}:${PORT}`), '--cluster-replicas', '1', '--cluster-yes'],
        60_000,
      );
      if (create.code !== 0) throw new Error(`redis-cli --cluster create failed (exit ${create.code}): ${create.stdout.slice(-2000)}`);
      await servers.waitUntil(
        'every node to report cluster_state:ok, and 3 primaries each with a replica in sync',
        async () => {
          for (const host of HOSTS) {
            const info = infoFields((await ask(host, ['cluster', 'info'])) ?? '');
            if (info.get('cluster_state') !== 'ok' || info.get('cluster_slots_ok') !== '16384') return false;
            const replication = infoFields((await ask(host, ['info', 'replication'])) ?? '');
            if (replication.get('role') === 'slave' && replication.get('master_link_status') !== 'up') return false;
          }
          const view = await nodes();
          return view.filter((node) => node.role === 'replica').length === 3;
        },
        60_000,
      );
    },
    urlFor: () => `redis+cluster://${HOSTS.map((host) => `${address(host)}:${PORT}`).join(',')}`,
    async serverOf(key: string) {
      const answer = await ask(HOSTS[0]!, ['cluster', 'keyslot', `${LOCK_KEY_PREFIX}${key}`]);
      const slot = Number(answer?.trim());
      if (!Number.isInteger(slot)) throw new Error(`CLUSTER KEYSLOT answered ${JSON.stringify(answer)}`);
      const owner = (await nodes()).find(
        (node) => node.role === 'primary' && !node.failed && node.slots.some(([from, to]) => slot >= from && slot <= to),
      );
      const host = owner && hostAt(owner.address);
      if (!host) throw new Error(`no live primary serves slot ${slot}`);
      return host;
    },
    async stop() {
      await servers.stopAll();
      if (dir) removeTempDir(dir);
    },
  };
}
