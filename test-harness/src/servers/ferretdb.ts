import { ferretdbBinary } from './binaries.js';
import { makeTempDir, removeTempDir } from './cleanup.js';
import { freePort, retryOnPortClash } from './ports.js';
import { startPostgres } from './postgres.js';
import { mongoHello } from './probes.js';
import { spawnServer } from './process.js';
import { waitUntilReady } from './wait.js';

export interface FerretdbServer {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * FerretDB v1 with its embedded SQLite backend, on a free loopback port and a fresh data dir:
 * a MongoDB wire-protocol server (see docs/testing.md for what it lacks compared with mongod).
 */
export function startFerretdb(dbName = 'holdfast'): Promise<FerretdbServer> {
  return retryOnPortClash(() => startOnce(dbName, (dir) => ['--handler=sqlite', `--sqlite-url=file:${dir}/`]));
}

/**
 * FerretDB v1 on its PostgreSQL backend, over a PostgreSQL server of the harness's own (stopped with
 * it). Its `_id` reads cost about a sixth of SQLite's per document kept: the bench holds many locks
 * on it (docs/performance.md).
 */
export async function startFerretdbOnPostgres(dbName = 'holdfast'): Promise<FerretdbServer> {
  const postgres = await startPostgres();
  try {
    const ferretdb = await retryOnPortClash(() => startOnce(dbName, () => ['--handler=postgresql', `--postgresql-url=${postgres.url}`]));
    return {
      ...ferretdb,
      stop: async () => {
        await ferretdb.stop();
        await postgres.stop();
      },
    };
  } catch (err) {
    await postgres.stop();
    throw err;
  }
}

async function startOnce(dbName: string, backendArgs: (dir: string) => string[]): Promise<FerretdbServer> {
  const bin = await ferretdbBinary();
  if (!bin) throw new Error('ferretdb not found (cache or PATH); run `npm run servers:install`');
  const port = await freePort();
  const dir = makeTempDir('ferretdb');
  const proc = spawnServer(`ferretdb:${port}`, bin, [
    ...backendArgs(dir),
    `--listen-addr=127.0.0.1:${port}`,
    `--state-dir=${dir}`,
    '--telemetry=disable',
    '--debug-addr=-',
    '--log-level=warn',
  ]);
  const stop = async (): Promise<void> => {
    await proc.stop();
    removeTempDir(dir);
  };
  try {
    await waitUntilReady(proc, 'hello', () => mongoHello('127.0.0.1', port), 30_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `mongodb://127.0.0.1:${port}/${dbName}`, port, stop };
}
