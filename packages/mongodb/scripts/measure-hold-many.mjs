// Time to hold N locks on FerretDB (SQLite, or PostgreSQL with ON_POSTGRES=1) from one provider (issue 15c).
// Usage: node measure-hold-many.mjs [count] [concurrency]

import { createMongoProvider } from '@holdfast/mongodb';
import { startFerretdb } from '@holdfast/test-harness/servers';
import { startFerretdbOnPostgres } from './ferretdb-postgres.mjs';

const count = Number(process.argv[2] ?? 10_000);
const concurrency = Number(process.argv[3] ?? 16);
const server = process.env.ON_POSTGRES ? await startFerretdbOnPostgres() : await startFerretdb();
const locks = createMongoProvider({ url: `${server.url}?holdfastPingInterval=5s&holdfastLockExpiration=60s`, callTimeoutMs: 30_000 });
const started = performance.now();
let next = 0;
let lastReport = started;
try {
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const lock = await locks.tryAcquire(`hold-many/${i}`);
        if (!lock) throw new Error(`hold-many/${i} was busy`);
        if ((i + 1) % 1000 === 0) {
          const now = performance.now();
          console.log(
            `${i + 1} held after ${((now - started) / 1000).toFixed(1)} s (last 1000 at ${(1000 / ((now - lastReport) / 1000)).toFixed(0)}/s)`,
          );
          lastReport = now;
        }
        if (performance.now() - started > 300_000) throw new Error(`gave up after 300 s at ${i + 1}`);
      }
    }),
  );
  console.log(
    `${count} locks held in ${((performance.now() - started) / 1000).toFixed(1)} s with ${concurrency} at a time (${process.env.ON_POSTGRES ? 'PostgreSQL' : 'SQLite'})`,
  );
} finally {
  const closing = performance.now();
  await locks.close();
  console.log(`close (releases every lock) took ${((performance.now() - closing) / 1000).toFixed(1)} s`);
  await server.stop();
}
