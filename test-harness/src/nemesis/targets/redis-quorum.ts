import { dirname, join } from 'node:path';
import { redisServerBinary } from '../../servers/binaries.js';
import { spawnServer } from '../../servers/process.js';
import type { FakeClock } from '../clock.js';
import type { NetworkRig } from '../network.js';
import type { NemesisTarget } from '../types.js';
import { runIn, withClock } from './in-namespace.js';
import { ServerProcesses } from './server-processes.js';

const PORT = 6379;
const NODES = ['r0', 'r1', 'r2'];

/**
 * Three independent Redis servers, each in its own namespace on its 10.213 address (no persistence),
 * used as a Redlock quorum: every worker's URL names all three. Redis expires keys on its own wall
 * clock, so a node under the fake clock expires leases early when its clock jumps forward.
 */
export function redisQuorumTarget(): NemesisTarget {
  let rig: NetworkRig | undefined;
  const servers = new ServerProcesses();
  const address = (i: number): string => rig!.addressOf(NODES[i]!);
  return {
    backend: 'redis-quorum',
    serverHosts: NODES,
    async start(network: NetworkRig, clocks: ReadonlyMap<string, FakeClock>) {
      rig = network;
      const bin = await redisServerBinary();
      if (!bin) throw new Error('redis-server not found; run `npm run servers:install`');
      NODES.forEach((host, i) => {
        const [command, args] = withClock(clocks.get(host), bin, [
          '--bind',
          address(i),
          '--port',
          String(PORT),
          '--save',
          '',
          '--appendonly',
          'no',
          '--protected-mode',
          'no',
        ]);
        const [cmd, argv] = rig!.commandIn(host, command, args);
        servers.add(spawnServer(`nemesis-redis-${i}`, cmd, argv));
      });
      const cli = join(dirname(bin), 'redis-cli');
      await servers.waitUntil(
        'the three Redis nodes to answer PING',
        async () => {
          const answers = await Promise.all(NODES.map((host, i) => runIn(rig!, host, cli, ['-h', address(i), '-p', String(PORT), 'ping'])));
          return answers.every(({ stdout }) => stdout.trim() === 'PONG');
        },
        30_000,
      );
    },
    urlFor: () => `redis://${address(0)}:${PORT}?quorum=${address(1)}:${PORT},${address(2)}:${PORT}`,
    async stop() {
      await servers.stopAll();
    },
  };
}
