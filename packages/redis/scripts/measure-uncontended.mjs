#!/usr/bin/env node
// Uncontended acquire+release on one private redis-server (issue 15's per-operation floor): the
// raw floor (SET NX PX, then a compare-and-delete EVALSHA) beside one or more builds of Holdfast,
// in short alternating slices so that load affects them alike; rates, ratios to raw and the client
// CPU per operation (a figure load moves less than the rate). Not a test: it prints figures.
// Build first (npm run build), then
//   node scripts/measure-uncontended.mjs [label=path/to/redis/dist/index.js ...] [--seconds=4] [--slice-ms=250] [--quorum]
//     [--only=<label|raw>]
// Without labels it measures this package's dist/index.js. --quorum runs on 3 servers (the raw
// floor then sends both commands to every node and settles on a majority, as redlock does; on one
// server it is the bench's floor: SET NX PX, then EVAL of the compare-and-delete source).
// --only runs one case alone (for `node --cpu-prof`).
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { startRedisSet } from '@holdfast/test-harness/servers';
import { Redis } from 'ioredis';

const args = process.argv.slice(2);
const option = (name, fallback) => args.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const seconds = Number(option('seconds', 4));
const sliceMs = Number(option('slice-ms', 250));
const only = option('only', undefined);
const quorum = args.includes('--quorum');
const implementations = args.filter((arg) => !arg.startsWith('--')).map((arg) => arg.split('='));
if (implementations.length === 0) implementations.push(['this build', new URL('../dist/index.js', import.meta.url).pathname]);

const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

const set = await startRedisSet(quorum ? 3 : 1);
const [first, ...others] = set.urls.map((url) => new URL(url).host);
const url = quorum ? `redis://${first}?quorum=${others.join(',')}` : set.urls[0];
let keys = 0;
const newKey = (what) => `measure/${process.pid}/${what}-${++keys}`;

/** Settles once `needed` of `promises` fulfilled; rejects once that can no longer happen. */
function majority(promises, needed) {
  return new Promise((resolve, reject) => {
    let yes = 0;
    let no = 0;
    for (const promise of promises)
      promise.then(
        () => ++yes === needed && resolve(),
        (error) => ++no > promises.length - needed && reject(error),
      );
  });
}

async function rawCase() {
  const clients = set.urls.map((node) => new Redis(node));
  const shas = await Promise.all(clients.map((client) => client.script('LOAD', RELEASE)));
  const key = newKey('raw');
  const needed = Math.floor(clients.length / 2) + 1;
  let ops = 0;
  return {
    label: 'raw',
    async once() {
      const value = `v${++ops}`;
      if (clients.length === 1) {
        // As the bench's floor does it (test-harness/src/bench/redis.ts), on a default ioredis client.
        if ((await clients[0].set(key, value, 'PX', 10_000, 'NX')) !== 'OK') throw new Error('raw SET NX found the key busy');
        await clients[0].eval(RELEASE, 1, key, value);
        return;
      }
      await majority(
        clients.map((client) =>
          client.set(key, value, 'PX', 10_000, 'NX').then((ok) => {
            if (ok !== 'OK') throw new Error('raw SET NX found the key busy');
          }),
        ),
        needed,
      );
      await majority(
        clients.map((client, i) => client.evalsha(shas[i], 1, key, value)),
        needed,
      );
    },
    close: async () => {
      for (const client of clients) client.disconnect();
    },
  };
}

async function holdfastCase(label, path) {
  const { createRedisProvider } = await import(pathToFileURL(path).href);
  const provider = createRedisProvider({ url });
  const key = newKey('holdfast');
  return {
    label,
    async once() {
      const lock = await provider.tryAcquire(key, { ttlMs: 10_000 });
      if (!lock) throw new Error('uncontended tryAcquire found the key busy');
      await lock.release();
    },
    close: () => provider.close(),
  };
}

async function slice(subject, ms) {
  const start = performance.now();
  const cpu = process.cpuUsage();
  let done = 0;
  while (performance.now() - start < ms) {
    await subject.once();
    done++;
  }
  const used = process.cpuUsage(cpu);
  return { done, ms: performance.now() - start, cpuUs: used.user + used.system };
}

const cases = [await rawCase()];
for (const [label, path] of implementations) cases.push(await holdfastCase(label, path));
const measured = only ? cases.filter((subject) => subject.label === only) : cases;
if (measured.length === 0) throw new Error(`--only=${only} names no case (${cases.map((c) => c.label).join(', ')})`);
const totals = measured.map(() => ({ done: 0, ms: 0, cpuUs: 0 }));
const load = [loadavg()[0]];
try {
  for (const subject of measured) await slice(subject, 300); // connect, load scripts, warm up the JIT
  for (let round = 0; round < Math.max(1, Math.round((seconds * 1000) / sliceMs)); round++) {
    for (const [i, subject] of measured.entries()) {
      const result = await slice(subject, sliceMs);
      totals[i].done += result.done;
      totals[i].ms += result.ms;
      totals[i].cpuUs += result.cpuUs;
    }
  }
  load.push(loadavg()[0]);
  const rawRate = measured[0].label === 'raw' ? (totals[0].done / totals[0].ms) * 1000 : undefined;
  console.log(
    `${quorum ? 'quorum of 3' : 'one redis-server'}; ${seconds} s per case in ${sliceMs} ms slices; load ${load.map((n) => n.toFixed(2)).join(' -> ')}`,
  );
  for (const [i, subject] of measured.entries()) {
    const { done, ms, cpuUs } = totals[i];
    const rate = (done / ms) * 1000;
    const ratio = rawRate ? ` ${(rate / rawRate).toFixed(2)}x raw;` : '';
    console.log(`${subject.label}: ${Math.round(rate).toLocaleString('en')} ops/s;${ratio} client CPU ${(cpuUs / done).toFixed(1)} us/op`);
  }
} finally {
  await Promise.all(cases.map((subject) => subject.close()));
  await set.stop();
}
