import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mariadbBinaries, onPath } from '../../servers/binaries.js';
import { makeTempDir, removeTempDir } from '../../servers/cleanup.js';
import { runToCompletion, spawnServer } from '../../servers/process.js';
import type { FakeClock } from '../clock.js';
import type { NetworkRig } from '../network.js';
import type { NemesisTarget } from '../types.js';
import { runIn, withClock } from './in-namespace.js';
import { ServerProcesses } from './server-processes.js';

/** The port inside the server's own namespace: nothing else listens there, so it can be fixed. */
const PORT = 13306;
const HOST = 'db';
const USER = 'holdfast';
const DATABASE = 'holdfast';

/** Run at every start (idempotent): the database, and a password-less user for the workers' hosts of the rig. */
const INIT_SQL = `CREATE DATABASE IF NOT EXISTS ${DATABASE};
CREATE USER IF NOT EXISTS '${USER}'@'10.213.%';
GRANT ALL PRIVILEGES ON *.* TO '${USER}'@'10.213.%';
`;

/**
 * One MariaDB server in its own namespace, listening only on its 10.213 address, optionally under a
 * fake clock: the MySQL adapter judges every lease on the server's UTC_TIMESTAMP(3). It reads no
 * option files, so nothing of the machine's own server applies.
 */
export function mariadbTarget(): NemesisTarget {
  let dir: string | undefined;
  const servers = new ServerProcesses();
  let address = '';
  return {
    backend: 'mysql',
    serverHosts: [HOST],
    async start(rig: NetworkRig, clocks: ReadonlyMap<string, FakeClock>) {
      const bins = await mariadbBinaries();
      if (!bins) throw new Error('mariadbd not found; run `npm run servers:install`');
      dir = makeTempDir('nemesis-mariadb');
      const dataDir = join(dir, 'data');
      const asRoot = process.getuid?.() === 0 ? ['--user=root'] : [];
      writeFileSync(join(dir, 'init.sql'), INIT_SQL);
      await runToCompletion(
        'mariadb-install-db',
        bins.installDb,
        [
          '--no-defaults',
          `--datadir=${dataDir}`,
          ...asRoot,
          '--auth-root-authentication-method=normal',
          '--skip-test-db',
          '--skip-name-resolve',
        ],
        { cwd: dir },
      );
      address = rig.addressOf(HOST);
      const [command, args] = withClock(clocks.get(HOST), bins.server, [
        '--no-defaults',
        `--datadir=${dataDir}`,
        `--socket=${join(dir, 'mariadbd.sock')}`,
        `--pid-file=${join(dir, 'mariadbd.pid')}`,
        `--port=${PORT}`,
        `--bind-address=${address}`,
        '--skip-networking=0',
        '--skip-name-resolve',
        ...asRoot,
        `--init-file=${join(dir, 'init.sql')}`,
        '--max-connections=200',
        '--innodb-buffer-pool-size=32M',
        '--innodb-flush-log-at-trx-commit=2',
      ]);
      const [cmd, argv] = rig.commandIn(HOST, command, args);
      servers.add(spawnServer('nemesis-mariadb', cmd, argv, { cwd: dir }));
      const admin = onPath('mariadb-admin') ?? '/usr/bin/mariadb-admin';
      await servers.waitUntil(
        'MariaDB to answer a ping from the rig',
        async () => {
          // From a client host: the grant is for 10.213.%, and a ping without one proves nothing.
          const { code } = await runIn(rig, rig.hostNames.find((host) => host !== HOST) ?? HOST, admin, [
            '--no-defaults',
            '-h',
            address,
            '-P',
            String(PORT),
            '-u',
            USER,
            '--connect-timeout=2',
            'ping',
          ]);
          return code === 0;
        },
        90_000,
      );
    },
    urlFor: () => `mysql://${USER}@${address}:${PORT}/${DATABASE}`,
    async stop() {
      await servers.stopAll();
      if (dir) removeTempDir(dir);
    },
  };
}
