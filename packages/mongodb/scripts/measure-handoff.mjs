// Hand-off latency on FerretDB: release() start -> the waiting provider holds the lock (issue 15b).
// Usage: node measure-handoff.mjs [rounds]. The holder releases 5 ms + a random 0-500 ms after the waiter began.

import { createMongoProvider } from '@holdfast/mongodb';
import { startFerretdb } from '@holdfast/test-harness/servers';
import { MongoClient } from 'mongodb';

const rounds = Number(process.argv[2] ?? 60);
const server = await startFerretdb();
const url = `${server.url}?holdfastPingInterval=1s&holdfastLockExpiration=30s`;
const counted = new MongoClient(server.url, { monitorCommands: true });
let commands = 0;
const byName = new Map();
counted.on('commandStarted', (event) => {
  commands++;
  const name = `${event.commandName} ${event.command[event.commandName]}`;
  byName.set(name, (byName.get(name) ?? 0) + 1);
});
const holder = createMongoProvider({ url });
const waiter = createMongoProvider({ url, client: counted });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (values, p) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))];
try {
  const key = 'handoff/one';
  const samples = [];
  for (let round = 0; round < rounds; round++) {
    const held = await holder.acquire(key, { waitMs: 10_000 });
    const waiting = waiter.acquire(key, { waitMs: 10_000 }).then((lock) => ({ lock, at: performance.now() }));
    await sleep(5 + Math.random() * 500);
    const releasedAt = performance.now();
    await held.release();
    const { lock, at } = await waiting;
    samples.push(at - releasedAt);
    await lock.release();
  }
  console.log(
    `hand-off p50 ${percentile(samples, 50).toFixed(1)} ms, p90 ${percentile(samples, 90).toFixed(1)} ms, max ${Math.max(...samples).toFixed(1)} ms over ${rounds} rounds`,
  );
  // The waiter's load while it waits on a held key and nothing happens.
  const held = await holder.acquire(key, { waitMs: 10_000 });
  const before = commands;
  byName.clear();
  const started = performance.now();
  const waiting = waiter.acquire(key, { waitMs: 5_000 }).catch(() => null);
  await waiting;
  console.log(
    `a waiter on a held key sends ${((commands - before) / ((performance.now() - started) / 1000)).toFixed(0)} commands/s (pings included): ${[...byName].map(([name, n]) => `${name} ${n}`).join(', ')}`,
  );
  await held.release();
  const idleBefore = commands;
  await sleep(3_000);
  console.log(`an idle provider sends ${((commands - idleBefore) / 3).toFixed(1)} commands/s (pings included)`);
} finally {
  await Promise.allSettled([holder.close(), waiter.close()]);
  await counted.close();
  await server.stop();
}
