import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mariadbBinaries } from './binaries.js';
import { makeTempDir, removeTempDir } from './cleanup.js';
import { startLocalDatabase } from './local-database.js';
import { freePort, retryOnPortClash } from './ports.js';
import { mysqlGreeting } from './probes.js';
import { runToCompletion, spawnServer } from './process.js';
import type { LocalDatabase } from './types.js';
import { readyOrStopped } from './wait.js';

const USER = 'holdfast';
const DATABASE = 'holdfast';

// Run by the server at every start (so it must be idempotent): the database and a password-less
// user the tests connect as, over TCP from 127.0.0.1.
const INIT_SQL = `CREATE DATABASE IF NOT EXISTS ${DATABASE};
CREATE USER IF NOT EXISTS '${USER}'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO '${USER}'@'127.0.0.1' WITH GRANT OPTION;
`;

/**
 * A MariaDB server of our own: mariadb-install-db into a temp dir, then `mariadbd` on a free
 * loopback port with its socket, pid file and data in that dir, reading no option files (so nothing
 * of the machine's own server applies). As root it runs with --user=root.
 */
export function startMariadb(): Promise<LocalDatabase> {
  return retryOnPortClash(startOnce);
}

async function startOnce(): Promise<LocalDatabase> {
  const bins = await mariadbBinaries();
  if (!bins) throw new Error('mariadbd / mariadb-install-db not found; run `npm run servers:install` (apt-get install mariadb-server)');
  const port = await freePort();
  const dir = makeTempDir('mariadb');
  const dataDir = join(dir, 'data');
  const asRoot = process.getuid?.() === 0 ? ['--user=root'] : [];
  try {
    writeFileSync(join(dir, 'init.sql'), INIT_SQL);
    await runToCompletion(
      `mariadb-install-db:${port}`,
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
  } catch (err) {
    removeTempDir(dir);
    throw err;
  }
  const launch = () => {
    const proc = spawnServer(
      `mariadbd:${port}`,
      bins.server,
      [
        '--no-defaults',
        `--datadir=${dataDir}`,
        `--socket=${join(dir, 'mariadbd.sock')}`,
        `--pid-file=${join(dir, 'mariadbd.pid')}`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        '--skip-networking=0',
        '--skip-name-resolve',
        ...asRoot,
        `--init-file=${join(dir, 'init.sql')}`,
        '--max-connections=200',
        '--innodb-buffer-pool-size=32M',
        // Only an operating-system crash loses what is written but not flushed; a killed server keeps it.
        '--innodb-flush-log-at-trx-commit=2',
      ],
      { cwd: dir },
    );
    return readyOrStopped(proc, 'its greeting', () => mysqlGreeting('127.0.0.1', port), 60_000);
  };
  return startLocalDatabase({
    url: `mysql://${USER}@127.0.0.1:${port}/${DATABASE}`,
    port,
    dir,
    dataDir,
    launch,
    crash: (server) => server.kill(),
    processes: (server) => [server.pid],
  });
}
