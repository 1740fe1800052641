#!/usr/bin/env node
// Quorum of 3: Holdfast beside redlock and the raw floor (SET NX PX and a compare-and-delete
// script on every node, settled by a majority), on 3 private redis-servers, in one run. Not a
// test: it prints figures. Build first (npm run build in packages/redis), then
//   node scripts/measure-quorum.mjs [--seconds=4] [--slice-ms=250] [--only=holdfast]
// Cases take turns in short slices until each had `seconds`, so load affects them alike.
// --only=<case> runs that case alone (for `node --cpu-prof`).
import { startRedisSet } from '@holdfast/test-harness/servers';
import { Redis } from 'ioredis';
import { createRedisProvider } from '../dist/index.js';
import { KeyNames } from '../dist/key-names.js';
import { NodeSet } from '../dist/node-set.js';
import { QUORUM_ACQUIRE } from '../dist/quorum-scripts.js';
import { RedisBackend } from '../dist/redis-backend.js';
import { RedisNode } from '../dist/redis-node.js';
import { RELEASE } from '../dist/scripts.js';

const args = process.argv.slice(2);
const option = (name, fallback) => args.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const seconds = Number(option('seconds', 4));
const sliceMs = Number(option('slice-ms', 250));
const only = option('only', undefined);

const set = await startRedisSet(3);
const [first, ...others] = set.urls.map((url) => new URL(url).host);
const url = `redis://${first}?quorum=${others.join(',')}`;
const connect = () => set.urls.map((node) => new Redis(node));
const closers = [];

/** One loop of `op` for `ms`: operations done and the time taken. */
async function loop(op, ms) {
  const start = performance.now();
  const cpu = process.cpuUsage();
  let done = 0;
  while (performance.now() - start < ms) {
    await op();
    done++;
  }
  const used = process.cpuUsage(cpu);
  return { done, ms: performance.now() - start, cpuUs: used.user + used.system };
}

/** Settles with the answers once `quorum` of `promises` fulfilled (or all settled). */
function majority(promises, quorum) {
  return new Promise((resolve) => {
    const answers = [];
    let settled = 0;
    for (const promise of promises)
      promise.then(
        (value) => {
          answers.push(value);
          if (answers.length === quorum || ++settled === promises.length) resolve(answers);
        },
        () => {
          if (++settled === promises.length) resolve(answers);
        },
      );
  });
}

const COMPARE_DELETE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

function holdfast() {
  const provider = createRedisProvider({ url });
  closers.push(() => provider.close());
  const key = `measure-quorum/${process.pid}/holdfast`;
  return async () => {
    const lock = await provider.tryAcquire(key);
    if (!lock) throw new Error('holdfast: busy');
    await lock.release();
  };
}

/** The adapter without core: its grant attempt and release, as core calls them. */
function adapter() {
  const settings = { db: 0, commandTimeoutMs: 2000, connectTimeoutMs: 3000 };
  const nodes = set.urls.map((node) => {
    const { hostname, port } = new URL(node);
    return new RedisNode(`redis ${hostname}:${port}`, { host: hostname, port: Number(port) }, settings);
  });
  const nodeSet = new NodeSet(nodes, { driftFactor: 0.01, straggleMs: 250 });
  const backend = new RedisBackend(nodeSet, new KeyNames('holdfast:', 0), { pollIntervalMs: 2000, splitVoteRetries: 3, retryJitterMs: 50 });
  const call = { signal: new AbortController().signal };
  closers.push(() => backend.close(call));
  const key = `measure-quorum/${process.pid}/adapter`;
  let n = 0;
  return async () => {
    const request = { key, lockId: `adapter-${++n}`, owner: 'measure', ttlMs: 30_000, autoRenew: true, onLost: () => undefined };
    const outcome = await backend.tryGrant(request, call);
    if (!outcome.granted) throw new Error('adapter: busy');
    await outcome.grant.release(call);
  };
}

/** Holdfast's two quorum scripts on bare clients, settled by a majority as the raw floor is. */
function scripts(options = {}) {
  const clients = set.urls.map((node) => new Redis(node, options));
  closers.push(() => Promise.all(clients.map((client) => client.quit())));
  const names = new KeyNames('holdfast:', 0).of(`measure-quorum/${process.pid}/scripts`);
  let n = 0;
  return async () => {
    const id = `scripts-${++n}`;
    const args = [id, 30_000, 'measure', '', '0', Date.now()];
    await majority(
      clients.map((client) => QUORUM_ACQUIRE.run(client, [names.lock, names.fence, names.holder], args)),
      2,
    );
    await majority(
      clients.map((client) => RELEASE.run(client, [names.lock, names.holder], [id, names.channel])),
      2,
    );
  };
}

async function redlock() {
  const Redlock = (await import('redlock')).default;
  const clients = connect();
  closers.push(() => Promise.all(clients.map((client) => client.quit())));
  const locks = new Redlock(clients, { retryCount: 0 });
  const key = `measure-quorum/${process.pid}/redlock`;
  return async () => {
    const lock = await locks.acquire([key], 30_000);
    await lock.release();
  };
}

function raw() {
  const clients = connect();
  closers.push(() => Promise.all(clients.map((client) => client.quit())));
  const key = `measure-quorum/${process.pid}/raw`;
  let n = 0;
  return async () => {
    const value = `v${++n}`;
    const set = await majority(
      clients.map((client) => client.set(key, value, 'PX', 30_000, 'NX')),
      2,
    );
    if (set.filter((answer) => answer === 'OK').length < 2) throw new Error('raw: busy');
    await majority(
      clients.map((client) => client.eval(COMPARE_DELETE, 1, key, value)),
      2,
    );
  };
}

const cases = {
  holdfast: holdfast(),
  'adapter alone': adapter(),
  'holdfast scripts alone': scripts(),
  'scripts, fail-fast clients': scripts({
    commandTimeout: 2000,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
  }),
  redlock: await redlock(),
  'raw SET NX PX + compare-delete': raw(),
};
const names = Object.keys(cases).filter((name) => only === undefined || name === only);
const results = Object.fromEntries(names.map((name) => [name, { done: 0, ms: 0, cpuUs: 0, slices: [] }]));
try {
  for (const name of names) await loop(cases[name], 300);
  for (let round = 0; round < Math.round((seconds * 1000) / sliceMs); round++) {
    const order = round % 2 === 1 ? [...names].reverse() : names;
    for (const name of order) {
      const slice = await loop(cases[name], sliceMs);
      results[name].done += slice.done;
      results[name].ms += slice.ms;
      results[name].cpuUs += slice.cpuUs;
      results[name].slices.push((slice.done * 1000) / slice.ms);
    }
  }
} finally {
  await Promise.all(closers.map((close) => close()));
  await set.stop();
}
const rate = (name) => (results[name].done * 1000) / results[name].ms;
for (const name of names)
  console.log(
    `${name.padEnd(32)} ${String(Math.round(rate(name))).padStart(6)} /s, this process ${Math.round(results[name].cpuUs / results[name].done)} µs CPU per op`,
  );
if (results.holdfast && results.redlock) {
  const ratios = results.holdfast.slices.map((value, i) => value / results.redlock.slices[i]).sort((a, b) => a - b);
  const median = ratios[Math.floor(ratios.length / 2)];
  console.log(`holdfast / redlock: ${(rate('holdfast') / rate('redlock')).toFixed(2)} overall, median of slice pairs ${median.toFixed(2)}`);
}
