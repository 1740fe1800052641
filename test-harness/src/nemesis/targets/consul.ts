import { join } from 'node:path';
import { consulBinary } from '../../servers/binaries.js';
import { makeTempDir, removeTempDir } from '../../servers/cleanup.js';
import { spawnServer } from '../../servers/process.js';
import type { NetworkRig } from '../network.js';
import type { NemesisTarget } from '../types.js';
import { runIn } from './in-namespace.js';
import { ServerProcesses } from './server-processes.js';

const HTTP = 8500;
const SERVERS = ['s0', 's1', 's2'];

/**
 * Three Consul servers, each in its own namespace bound to its 10.213 address with Consul's default
 * ports (each namespace has its own). Worker w talks to the agent of server w mod 3, as an app talks
 * to its local agent, so a split leaves holders on both sides. The runner probes them with curl from
 * inside their namespaces: the root namespace never sends to the rig.
 */
export function consulTarget(lockDelay = '1s'): NemesisTarget {
  let dir: string | undefined;
  let rig: NetworkRig | undefined;
  const servers = new ServerProcesses();
  const address = (i: number): string => rig!.addressOf(SERVERS[i]!);

  const get = async (i: number, path: string): Promise<string | null> => {
    const { code, stdout } = await runIn(rig!, SERVERS[i]!, '/usr/bin/curl', ['-sf', '-m', '2', `http://${address(i)}:${HTTP}${path}`]);
    return code === 0 ? stdout : null;
  };

  /** The server host that s`i` believes leads, or null. */
  const leaderSeenBy = async (i: number): Promise<string | null> => {
    const body = await get(i, '/v1/status/leader');
    const leader = body ? (JSON.parse(body) as string) : '';
    const index = SERVERS.findIndex((_, j) => leader === `${address(j)}:8300`);
    return index >= 0 ? SERVERS[index]! : null;
  };

  return {
    backend: 'consul',
    serverHosts: SERVERS,
    async start(network) {
      rig = network;
      const bin = await consulBinary();
      if (!bin) throw new Error('consul not found; run `npm run servers:install`');
      dir = makeTempDir('nemesis-consul');
      SERVERS.forEach((host, i) => {
        const joins = SERVERS.filter((other) => other !== host).map((other) => `-retry-join=${rig!.addressOf(other)}`);
        const [cmd, argv] = rig!.commandIn(host, bin, [
          'agent',
          '-server',
          '-bootstrap-expect=3',
          `-node=holdfast-${i}`,
          `-data-dir=${join(dir!, host)}`,
          `-bind=${address(i)}`,
          `-client=${address(i)}`,
          '-log-level=warn',
          '-retry-interval=1s',
          '-hcl=performance { raft_multiplier = 1 }',
          '-dns-port=-1',
          '-grpc-port=-1',
          '-grpc-tls-port=-1',
          '-https-port=-1',
          ...joins,
        ]);
        servers.add(spawnServer(`nemesis-consul-${i}`, cmd, argv));
      });
      await servers.waitUntil(
        'a Consul leader seen by all three and every node registered',
        async () => {
          const views = await Promise.all(SERVERS.map((_, i) => leaderSeenBy(i)));
          if (!views[0] || views.some((view) => view !== views[0])) return false;
          const registered = await Promise.all(SERVERS.map((_, i) => get(i, `/v1/catalog/node/holdfast-${i}`)));
          return registered.every((body) => body !== null && body !== 'null' && body.includes('"Node"'));
        },
        90_000,
      );
    },
    urlFor: (worker) => `consul://${address(worker % 3)}:${HTTP}?lockDelay=${lockDelay}&prefix=holdfast-nemesis`,
    async leader() {
      for (let i = 0; i < SERVERS.length; i++) {
        const seen = await leaderSeenBy(i);
        if (seen) return seen;
      }
      throw new Error('no Consul server names a leader');
    },
    async stop() {
      await servers.stopAll();
      if (dir) removeTempDir(dir);
    },
  };
}
