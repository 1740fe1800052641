// FerretDB 1.24 on PostgreSQL, from the harness's private PostgreSQL (for measurements only).
import { spawn } from 'node:child_process';
import { ferretdbBinary, freePort, startPostgres } from '@holdfast/test-harness/servers';
import { MongoClient } from 'mongodb';

export async function startFerretdbOnPostgres() {
  const postgres = await startPostgres();
  const port = await freePort();
  const child = spawn(
    await ferretdbBinary(),
    [
      '--handler=postgresql',
      `--postgresql-url=${postgres.url}`,
      `--listen-addr=127.0.0.1:${port}`,
      '--telemetry=disable',
      '--debug-addr=-',
      '--log-level=warn',
      `--state-dir=${postgres.dir ?? '/tmp'}`,
    ],
    { stdio: 'inherit' },
  );
  const url = `mongodb://127.0.0.1:${port}/holdfast`;
  for (let i = 0; ; i++) {
    const client = new MongoClient(url, { serverSelectionTimeoutMS: 500 });
    try {
      await client.db().command({ ping: 1 });
      await client.close();
      break;
    } catch (error) {
      await client.close();
      if (i > 60) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  return {
    url,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      await postgres.stop();
    },
  };
}
