// n providers contending on one key on FerretDB (issue 15: the 64-contender cell): grants per second
// as they come, wait p50 / p99, double grants, failed acquires, and the commands sent by name.
// Usage: node measure-contenders.mjs [contenders=64] [seconds=8]. DIST=<path to a built index.js> measures another build (A/B).

import { startFerretdb } from '@holdfast/test-harness/servers';
import { MongoClient } from 'mongodb';

const { createMongoProvider } = await import(process.env.DIST ?? '@holdfast/mongodb');
const n = Number(process.argv[2] ?? 64);
const seconds = Number(process.argv[3] ?? 8);
const server = await startFerretdb();
let commands = 0;
const byName = new Map();
const providers = [];
for (let i = 0; i < n; i++) {
  const client = new MongoClient(server.url, { monitorCommands: true });
  client.on('commandStarted', (event) => {
    commands++;
    const name = `${event.commandName} ${event.command[event.commandName]}`;
    byName.set(name, (byName.get(name) ?? 0) + 1);
  });
  providers.push(createMongoProvider({ url: server.url, client }));
}
// Connections and first-use setup are not measured.
await Promise.all(providers.map(async (provider, i) => (await provider.acquire(`warm/${i}`)).release()));
const stop = new AbortController();
const started = performance.now();
let grants = 0;
let failures = 0;
let firstFailure;
let holding = 0;
let overlaps = 0;
const waits = [];
const ticker = setInterval(
  () => console.log(`${((performance.now() - started) / 1000).toFixed(0)} s: ${grants} grants, ${commands} commands`),
  1000,
);
const loops = providers.map(async (provider) => {
  while (!stop.signal.aborted) {
    const asked = performance.now();
    try {
      const lock = await provider.acquire('contended/key', { signal: stop.signal, waitMs: 120_000 });
      waits.push(performance.now() - asked);
      grants++;
      if (++holding > 1) overlaps++;
      await new Promise(setImmediate);
      holding--;
      await lock.release();
    } catch (error) {
      if (!stop.signal.aborted) {
        failures++;
        firstFailure ??= error;
      }
    }
  }
});
await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
stop.abort();
clearInterval(ticker);
await Promise.all(loops);
const sorted = waits.sort((a, b) => a - b);
const at = (p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]?.toFixed(0);
console.log(
  `${n} contenders, ${seconds} s: ${grants} grants (${(grants / seconds).toFixed(1)}/s), wait p50 ${at(50)} ms, p99 ${at(99)} ms, ` +
    `double grants ${overlaps}, failed acquires ${failures}${firstFailure ? ` (${firstFailure.message})` : ''}`,
);
console.log(
  [...byName]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 10)
    .map(([name, count]) => `${name} ${count}`)
    .join(', '),
);
await Promise.allSettled(providers.map((provider) => provider.close()));
await server.stop();
