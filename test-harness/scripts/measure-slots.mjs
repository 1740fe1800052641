#!/usr/bin/env node
// Semaphore slots against plain locks on a private server (redis-server, or the harness's FerretDB
// on SQLite), in the same run. Not a test: it prints figures. Build first (npm run build), then
//   node test-harness/scripts/measure-slots.mjs redis|mongodb [--seconds=3] [--rounds=3]
// Each round measures every case once, in alternating order, so load affects them alike.
import { createLockProvider } from '@holdfast/core';
import { startFerretdb, startRedis } from '../dist/servers/index.js';

const SERVERS = {
  redis: async () => {
    const server = await startRedis();
    return { server, url: server.url };
  },
  mongodb: async () => {
    const server = await startFerretdb();
    return { server, url: `${server.url}?holdfastPingInterval=1s&holdfastLockExpiration=30s` };
  },
};

const args = process.argv.slice(2);
const backend = args.find((arg) => !arg.startsWith('--'));
if (!(backend in SERVERS)) {
  console.error('usage: node test-harness/scripts/measure-slots.mjs redis|mongodb [--seconds=3] [--rounds=3]');
  process.exit(2);
}
const option = (name, fallback) => Number(args.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const seconds = option('seconds', 3);
const rounds = option('rounds', 3);

const { server, url } = await SERVERS[backend]();
let keys = 0;
const newKey = (what) => `measure-slots/${process.pid}/${what}-${++keys}`;

/** Uncontended: one loop of tryAcquire + release for `ms`; operations per second. */
async function uncontended(take, ms) {
  const until = Date.now() + ms;
  let done = 0;
  while (Date.now() < until) {
    const held = await take();
    if (!held) throw new Error('an uncontended attempt was refused');
    await held.release();
    done++;
  }
  return (done * 1000) / ms;
}

/** Calls that failed (on FerretDB, a release not confirmed within callTimeoutMs is queued and retried by the pinger). */
const failures = {};

/** `contenders` loops over two providers, each acquire (waiting) + release on one key for `ms`; grants per second. */
async function contended(providers, takeOf, contenders, ms, name) {
  const until = Date.now() + ms;
  let grants = 0;
  const loop = async (provider) => {
    while (Date.now() < until) {
      try {
        const held = await takeOf(provider).acquire({ waitMs: 10_000 });
        grants++;
        await held.release();
      } catch (error) {
        failures[name] = [...(failures[name] ?? []), error.message];
      }
    }
  };
  await Promise.all(Array.from({ length: contenders }, (_, i) => loop(providers[i % providers.length])));
  return (grants * 1000) / ms;
}

const providers = await Promise.all([createLockProvider(url), createLockProvider(url)]);
const [locks] = providers;
const lockKey = newKey('lock');
const slotKey = newKey('slots');
const contendedLock = newKey('contended-lock');
const contendedSlots = newKey('contended-slots');
const cases = {
  'lock tryAcquire+release': () => uncontended(() => locks.tryAcquire(lockKey), seconds * 1000),
  'slot (limit 4) tryAcquire+release': () => uncontended(() => locks.semaphore(slotKey, 4).tryAcquire(), seconds * 1000),
  'lock, 8 contenders': () => contended(providers, (p) => ({ acquire: (o) => p.acquire(contendedLock, o) }), 8, seconds * 1000, 'lock'),
  'slots (limit 4), 8 contenders': () => contended(providers, (p) => p.semaphore(contendedSlots, 4), 8, seconds * 1000, 'slots'),
};
const results = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
try {
  // Connect, create the collections or load the scripts before measuring.
  await uncontended(() => locks.tryAcquire(lockKey), 200);
  await uncontended(() => locks.semaphore(slotKey, 4).tryAcquire(), 200);
  for (let round = 0; round < rounds; round++) {
    const names = Object.keys(cases);
    if (round % 2 === 1) names.reverse();
    for (const name of names) results[name].push(await cases[name]());
  }
} finally {
  await Promise.all(providers.map((provider) => provider.close()));
  await server.stop();
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const range = (values) => `${Math.round(Math.min(...values))}-${Math.round(Math.max(...values))} (median ${Math.round(median(values))})`;
for (const [name, values] of Object.entries(results))
  console.log(`${name.padEnd(36)} ${range(values)} /s  (${values.map(Math.round).join(', ')})`);
const ratio = (a, b) => results[a].map((value, i) => value / results[b][i]);
console.log(
  `slot / lock, uncontended: ${range(ratio('slot (limit 4) tryAcquire+release', 'lock tryAcquire+release').map((r) => r * 100))} %`,
);
console.log(`slots / lock, 8 contenders: ${range(ratio('slots (limit 4), 8 contenders', 'lock, 8 contenders').map((r) => r * 100))} %`);
for (const [name, messages] of Object.entries(failures)) console.log(`${name}: ${messages.length} failed calls, e.g. ${messages[0]}`);
