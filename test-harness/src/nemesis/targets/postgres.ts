import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { postgresBinDir } from '../../servers/binaries.js';
import { makeTempDir, removeTempDir } from '../../servers/cleanup.js';
import { accountForServer } from '../../servers/os-user.js';
import { runToCompletion, spawnServer } from '../../servers/process.js';
import type { FakeClock } from '../clock.js';
import type { NetworkRig } from '../network.js';
import type { NemesisTarget } from '../types.js';
import { runIn, withClock } from './in-namespace.js';
import { ServerProcesses } from './server-processes.js';

/** The port inside the server's own namespace: nothing else listens there, so it can be fixed. */
const PORT = 15432;
const HOST = 'db';

/**
 * One PostgreSQL server in its own namespace, listening only on its 10.213 address, optionally under
 * a fake clock (lease expiry is judged on the server's clock). As root it runs as `postgres`, through
 * setpriv inside `ip netns exec` (entering a namespace needs root; PostgreSQL refuses it).
 */
export function postgresTarget(): NemesisTarget {
  let dir: string | undefined;
  const servers = new ServerProcesses();
  let address = '';
  return {
    backend: 'postgres',
    serverHosts: [HOST],
    async start(rig: NetworkRig, clocks: ReadonlyMap<string, FakeClock>) {
      const bin = await postgresBinDir();
      if (!bin) throw new Error('PostgreSQL not found; run `npm run servers:install`');
      dir = makeTempDir('nemesis-postgres');
      const dataDir = join(dir, 'data');
      const account = accountForServer('postgres', dir);
      await runToCompletion(
        'initdb',
        join(bin, 'initdb'),
        ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '--no-instructions', '-E', 'UTF8', '--locale=C'],
        {
          cwd: dir,
          ...account,
        },
      );
      // initdb trusts loopback only; the workers come from their own hosts of the rig.
      appendFileSync(join(dataDir, 'pg_hba.conf'), 'host all all 10.213.0.0/16 trust\n');
      address = rig.addressOf(HOST);
      const asUser = account ? ['/usr/bin/setpriv', `--reuid=${account.uid}`, `--regid=${account.gid}`, '--clear-groups'] : [];
      const [command, args] = withClock(clocks.get(HOST), join(bin, 'postgres'), [
        '-D',
        dataDir,
        '-p',
        String(PORT),
        '-k',
        dir,
        '-c',
        `listen_addresses=${address}`,
        '-c',
        'fsync=off',
        '-c',
        'shared_buffers=32MB',
        '-c',
        'max_connections=100',
        '-c',
        'log_min_messages=warning',
      ]);
      const [first, ...rest] = asUser.length ? [...asUser, command, ...args] : [command, ...args];
      const [cmd, argv] = rig.commandIn(HOST, first!, rest);
      servers.add(spawnServer('nemesis-postgres', cmd, argv, { cwd: dir, stopSignal: 'SIGINT' }));
      const ready = join(bin, 'pg_isready');
      await servers.waitUntil(
        'PostgreSQL to accept connections',
        async () => (await runIn(rig, HOST, ready, ['-h', address, '-p', String(PORT), '-U', 'postgres'])).code === 0,
        60_000,
      );
    },
    urlFor: () => `postgres://postgres@${address}:${PORT}/postgres`,
    async stop() {
      await servers.stopAll();
      if (dir) removeTempDir(dir);
    },
  };
}
