import { ferretdbBinary } from '../../servers/binaries.js';
import { makeTempDir, removeTempDir } from '../../servers/cleanup.js';
import { spawnServer } from '../../servers/process.js';
import type { NetworkRig } from '../network.js';
import type { NemesisTarget } from '../types.js';
import { tcpOpenFrom } from './in-namespace.js';
import { ServerProcesses } from './server-processes.js';

const PORT = 27017;
const HOST = 'db';

/**
 * FerretDB (MongoDB's wire protocol) on its embedded SQLite backend, in its own namespace on its
 * 10.213 address. The MongoDB adapter judges leases on the server's time (`hello`'s localTime), which
 * FerretDB, a Go binary, reads without libc: libfaketime cannot move it, so this target has no clock scenario.
 */
export function ferretdbTarget(): NemesisTarget {
  let dir: string | undefined;
  const servers = new ServerProcesses();
  let address = '';
  return {
    backend: 'mongodb',
    serverHosts: [HOST],
    async start(rig: NetworkRig) {
      const bin = await ferretdbBinary();
      if (!bin) throw new Error('ferretdb not found; run `npm run servers:install`');
      dir = makeTempDir('nemesis-ferretdb');
      address = rig.addressOf(HOST);
      const [cmd, argv] = rig.commandIn(HOST, bin, [
        '--handler=sqlite',
        `--sqlite-url=file:${dir}/`,
        `--listen-addr=${address}:${PORT}`,
        `--state-dir=${dir}`,
        '--telemetry=disable',
        '--debug-addr=-',
        '--log-level=warn',
      ]);
      servers.add(spawnServer('nemesis-ferretdb', cmd, argv));
      // From a client host: the rig's hosts are the only ones that can reach it.
      const client = rig.hostNames.find((host) => host !== HOST) ?? HOST;
      await servers.waitUntil('FerretDB to accept connections', () => tcpOpenFrom(rig, client, address, PORT), 60_000);
    },
    // Pings every 500 ms and a 2 s default lease (at least 3 pings): with the defaults (30 s, 15 min) the
    // smallest lease is 90 s, and no cut of a minute-long run would outlast it.
    urlFor: () => `mongodb://${address}:${PORT}/holdfast?directConnection=true&holdfastPingInterval=500ms&holdfastLockExpiration=2s`,
    async stop() {
      await servers.stopAll();
      if (dir) removeTempDir(dir);
    },
  };
}
