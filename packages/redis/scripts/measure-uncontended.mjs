#!/usr/bin/env node
// Uncontended acquire+release (issue 15's per-operation goals) on one private redis-server, or
// (--quorum) on 3: the raw floor and redlock beside one or more builds of Holdfast, in short
// alternating slices so that load affects them alike; rates, ratios to raw and to redlock, and the
// client CPU per operation (a figure load moves less than the rate). Not a test: it prints figures.
// Build first (npm run build), then
//   node scripts/measure-uncontended.mjs [label=path/to/redis/dist/index.js ...] [--quorum] [--parts]
//     [--seconds=4] [--slice-ms=250] [--only=<case>]
// Without labels it measures this package's dist/index.js. A build resolves @holdfast/core from the
// node_modules above it: to measure an older build honestly (with its own core), copy its redis and
// core dist, each with its package.json, to <dir>/node_modules/@holdfast/{redis,core}, link
// <dir>/node_modules/ioredis to this workspace's, and pass <dir>/node_modules/@holdfast/redis/dist/index.js.
// The raw floor is SET NX PX, then a compare-and-delete script by EVALSHA: on one server on a
// default client (the bench's floor); on a quorum each command sent to every node and settled by a
// majority, as redlock does. --parts adds, for the first build, its two scripts on bare
// clients (no Holdfast client code: the server's share) and its backend without core (the adapter).
// --only runs one case alone (for `node --cpu-prof`).
import { loadavg } from 'node:os';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startRedisSet } from '@holdfast/test-harness/servers';
import { Redis } from 'ioredis';
import Redlock from 'redlock';

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
const needed = Math.floor(set.urls.length / 2) + 1;
let keys = 0;
const newKey = (what) => `measure/${process.pid}/${what}-${++keys}`;
const bareClients = (options) => {
  const clients = set.urls.map((node) => new Redis(node, options));
  const close = async () => {
    for (const client of clients) client.disconnect();
  };
  return { clients, close };
};

/** Settles once `needed` of `promises` fulfilled; rejects once that can no longer happen. */
function majority(promises) {
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
  const { clients, close } = bareClients();
  const shas = await Promise.all(clients.map((client) => client.script('LOAD', RELEASE)));
  const key = newKey('raw');
  let ops = 0;
  const setNx = (client, value) =>
    client.set(key, value, 'PX', 10_000, 'NX').then((ok) => {
      if (ok !== 'OK') throw new Error('raw SET NX found the key busy');
    });
  async function once() {
    const value = `v${++ops}`;
    if (clients.length === 1) {
      // As the bench's floor does it (test-harness/src/bench/redis.ts), on a default ioredis client.
      await setNx(clients[0], value);
      await clients[0].evalsha(shas[0], 1, key, value);
      return;
    }
    await majority(clients.map((client) => setNx(client, value)));
    await majority(clients.map((client, i) => client.evalsha(shas[i], 1, key, value)));
  }
  return { label: 'raw', once, close };
}

async function redlockCase() {
  const { clients, close } = bareClients();
  const locks = new Redlock(clients, { retryCount: 0 });
  const key = newKey('redlock');
  return { label: 'redlock', once: async () => (await locks.acquire([key], 10_000)).release(), close };
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

/** A build's own modules (its dist folder). */
const modules = (path, ...names) => Promise.all(names.map((name) => import(pathToFileURL(`${dirname(path)}/${name}.js`).href)));

/** The build's grant and release scripts on bare clients, with the keys and arguments its adapter sends. */
async function scriptsCase(label, path) {
  const [{ KeyNames }, scripts, queue, quorumScripts] = await modules(path, 'key-names', 'scripts', 'queue-scripts', 'quorum-scripts');
  const { clients, close } = bareClients();
  const names = new KeyNames('holdfast:', 0).of(newKey('scripts'));
  const grant = quorum ? quorumScripts.QUORUM_ACQUIRE : queue.ACQUIRE_IN_TURN;
  const grantKeys = quorum
    ? [names.lock, names.fence, names.holder]
    : [names.lock, names.fence, names.holder, names.queue, names.queueExpiries];
  const releaseKeys = quorum ? [names.lock, names.holder] : [names.lock, names.holder, names.queue, names.queueExpiries];
  // Builds before the plain attempt's short arguments need the waiter's three.
  const waiterArgs = quorum ? [] : grant.source.includes("ARGV[6] or ''") ? [] : ['', 0, 2000];
  let ops = 0;
  async function once() {
    const id = `scripts-${++ops}`;
    const grantArgs = [id, 10_000, 'measure', '', '0', ...(quorum ? [Date.now()] : waiterArgs)];
    await majority(clients.map((client) => grant.run(client, grantKeys, grantArgs)));
    await majority(clients.map((client) => scripts.RELEASE.run(client, releaseKeys, [id, names.channel])));
  }
  return { label: `${label}: scripts alone`, once, close };
}

/** The build's backend without core: its grant attempt and release, as core calls them. */
async function adapterCase(label, path) {
  const [{ KeyNames }, { NodeSet }, { RedisBackend }, { SingleNodeBackend }, { RedisNode }] = await modules(
    path,
    'key-names',
    'node-set',
    'redis-backend',
    'single-node-backend',
    'redis-node',
  );
  const settings = { db: 0, commandTimeoutMs: 2000, connectTimeoutMs: 3000 };
  const nodes = set.urls.map((node) => {
    const { hostname, port } = new URL(node);
    return new RedisNode(`redis ${hostname}:${port}`, { host: hostname, port: Number(port) }, settings);
  });
  const nodeSet = new NodeSet(nodes, { driftFactor: 0.01, straggleMs: 250 });
  // Builds before the siblings (single node and quorum) had the quorum in redis-backend.js.
  const QuorumBackend = quorum ? ((await modules(path, 'quorum-backend').catch(() => [{}]))[0].QuorumBackend ?? RedisBackend) : undefined;
  const Backend = quorum ? QuorumBackend : SingleNodeBackend;
  const backend = new Backend(nodeSet, new KeyNames('holdfast:', 0), { pollIntervalMs: 2000, splitVoteRetries: 3, retryJitterMs: 50 });
  const call = { signal: new AbortController().signal };
  const key = newKey('adapter');
  let ops = 0;
  async function once() {
    const request = { key, lockId: `adapter-${++ops}`, owner: 'measure', ttlMs: 10_000, autoRenew: true, onLost: () => undefined };
    const outcome = await backend.tryGrant(request, call);
    if (!outcome.granted) throw new Error('adapter: busy');
    await outcome.grant.release(call);
  }
  return { label: `${label}: adapter alone`, once, close: () => backend.close(call) };
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

const cases = [await rawCase(), await redlockCase()];
for (const [label, path] of implementations) cases.push(await holdfastCase(label, path));
if (args.includes('--parts')) cases.push(await adapterCase(...implementations[0]), await scriptsCase(...implementations[0]));
const measured = only ? cases.filter((subject) => subject.label === only) : cases;
if (measured.length === 0) throw new Error(`--only=${only} names no case (${cases.map((c) => c.label).join(', ')})`);
const totals = measured.map(() => ({ done: 0, ms: 0, cpuUs: 0, rates: [] }));
const load = [loadavg()[0]];
try {
  for (const subject of measured) await slice(subject, 300); // connect, load scripts, warm up the JIT
  for (let round = 0; round < Math.max(1, Math.round((seconds * 1000) / sliceMs)); round++) {
    // Every other round in reverse order, so that no case always follows the same one.
    const order = round % 2 === 1 ? [...measured.entries()].reverse() : [...measured.entries()];
    for (const [i, subject] of order) {
      const result = await slice(subject, sliceMs);
      totals[i].done += result.done;
      totals[i].ms += result.ms;
      totals[i].cpuUs += result.cpuUs;
      totals[i].rates.push((result.done / result.ms) * 1000);
    }
  }
  load.push(loadavg()[0]);
  const rateOf = (label) => {
    const i = measured.findIndex((subject) => subject.label === label);
    return i < 0 ? undefined : (totals[i].done / totals[i].ms) * 1000;
  };
  const [rawRate, redlockRate] = [rateOf('raw'), rateOf('redlock')];
  const redlockSlices = totals[measured.findIndex((subject) => subject.label === 'redlock')]?.rates;
  console.log(
    `${quorum ? 'quorum of 3' : 'one redis-server'}; ${seconds} s per case in ${sliceMs} ms slices; load ${load.map((n) => n.toFixed(2)).join(' -> ')}`,
  );
  for (const [i, subject] of measured.entries()) {
    const { done, ms, cpuUs, rates } = totals[i];
    const rate = (done / ms) * 1000;
    const ratio = rawRate ? ` ${(rate / rawRate).toFixed(2)}x raw;` : '';
    // The median of the slice pairs is less moved by a burst of load than the overall ratio.
    const pairs = redlockSlices && rates.map((value, slot) => value / redlockSlices[slot]).sort((a, b) => a - b);
    const vsRedlock = redlockRate
      ? ` ${(rate / redlockRate).toFixed(2)}x redlock (slice median ${pairs[pairs.length >> 1].toFixed(2)});`
      : '';
    console.log(
      `${subject.label}: ${Math.round(rate).toLocaleString('en')} ops/s;${ratio}${vsRedlock} client CPU ${(cpuUs / done).toFixed(1)} us/op`,
    );
  }
} finally {
  await Promise.all(cases.map((subject) => subject.close()));
  await set.stop();
}
