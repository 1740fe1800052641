import { ferretdbBinary } from './binaries.js';
import { makeTempDir, removeTempDir } from './cleanup.js';
import { freePort, retryOnPortClash } from './ports.js';
import { mongoHello } from './probes.js';
import { spawnServer } from './process.js';
import { waitUntilReady } from './wait.js';

/**
 * FerretDB v1 with its embedded SQLite backend, on a free loopback port and a fresh data dir:
 * a MongoDB wire-protocol server (see docs/testing.md for what it lacks compared with mongod).
 */
export function startFerretdb(dbName = 'holdfast'): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  return retryOnPortClash(() => startOnce(dbName));
}

async function startOnce(dbName: string): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  const bin = await ferretdbBinary();
  if (!bin) throw new Error('ferretdb not found (cache or PATH); run `npm run servers:install`');
  const port = await freePort();
  const dir = makeTempDir('ferretdb');
  const proc = spawnServer(`ferretdb:${port}`, bin, [
    '--handler=sqlite',
    `--sqlite-url=file:${dir}/`,
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
