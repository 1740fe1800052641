import { join } from 'node:path';
import { postgresBinDir } from './binaries.js';
import { makeTempDir, removeTempDir } from './cleanup.js';
import { startLocalDatabase } from './local-database.js';
import { type Account, accountForServer } from './os-user.js';
import { freePort, retryOnPortClash } from './ports.js';
import { postgresReady } from './probes.js';
import { withChildren } from './proc-tree.js';
import { type ManagedProcess, runToCompletion, spawnServer } from './process.js';
import type { LocalDatabase } from './types.js';
import { readyOrStopped } from './wait.js';

const USER = 'postgres';
const DATABASE = 'postgres';

/**
 * A PostgreSQL server of our own: initdb into a temp dir (trust authentication), then `postgres`
 * listening on 127.0.0.1 only, on a free port, with its unix socket in the temp dir too. As root it
 * runs as the `postgres` account (PostgreSQL refuses root).
 */
export function startPostgres(): Promise<LocalDatabase> {
  return retryOnPortClash(startOnce);
}

async function startOnce(): Promise<LocalDatabase> {
  const bin = await postgresBinDir();
  if (!bin) throw new Error('PostgreSQL not found (/usr/lib/postgresql/<major>/bin or initdb on PATH); run `npm run servers:install`');
  const port = await freePort();
  const dir = makeTempDir('postgres');
  const dataDir = join(dir, 'data');
  let account: Account | undefined;
  try {
    account = accountForServer(USER, dir);
    await runToCompletion(
      `initdb:${port}`,
      join(bin, 'initdb'),
      ['-D', dataDir, '-U', USER, '--auth=trust', '--no-sync', '--no-instructions', '-E', 'UTF8', '--locale=C'],
      { cwd: dir, ...account },
    );
  } catch (err) {
    removeTempDir(dir);
    throw err;
  }
  return startLocalDatabase({
    url: `postgres://${USER}@127.0.0.1:${port}/${DATABASE}`,
    port,
    dir,
    dataDir,
    launch: () => launchPostgres(bin, dir, dataDir, port, account),
    // Immediate shutdown (what `pg_ctl stop -m immediate` sends): the postmaster kills its backends at
    // once and writes no checkpoint, so the next start runs crash recovery. Unlike SIGKILL of the
    // postmaster alone it leaves no orphaned backends holding the shared memory.
    crash: async (server) => {
      process.kill(server.pid, 'SIGQUIT');
      await server.done;
    },
    processes: (server) => withChildren(server.pid),
  });
}

async function launchPostgres(
  bin: string,
  dir: string,
  dataDir: string,
  port: number,
  account: Account | undefined,
): Promise<ManagedProcess> {
  const proc = spawnServer(
    `postgres:${port}`,
    join(bin, 'postgres'),
    [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      // Only an operating-system crash loses unsynced writes; a killed server keeps them (they are in the page cache).
      '-c',
      'fsync=off',
      '-c',
      'shared_buffers=32MB',
      '-c',
      'max_connections=200',
      '-c',
      'log_min_messages=warning',
    ],
    { cwd: dir, ...account, stopSignal: 'SIGINT' /* fast shutdown: does not wait for clients to leave */ },
  );
  return readyOrStopped(proc, 'a session', () => postgresReady('127.0.0.1', port, USER, DATABASE), 60_000);
}
