// What waiting and monitoring cost on Consul, measured on a dev agent the harness starts (not a test):
//   node scripts/watch-cost.mjs [path/to/dist/index.js] [--hold 10000] [--slice 5000] [--rounds 3]
// 1. A child process holds --hold locks in prefix "full"; this process loops acquire+release of one
//    key in "full" and in "empty", alternating slices: ops/s each, and the idle holder's CPU meanwhile.
// 2. n contenders loop acquire -> release on one key (n = 1, 64 providers, 64 waiters of one provider): grants/s.
// The adapter comes from the given module (default: this package's dist), so two builds can be compared.
import { fork } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { startConsulDev } from '@holdfast/test-harness/servers';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    hold: { type: 'string', default: '10000' },
    slice: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '3' },
    role: { type: 'string' },
    url: { type: 'string' },
  },
});
const modulePath = resolve(positionals[0] ?? new URL('../dist/index.js', import.meta.url).pathname);
const { createConsulProvider } = await import(pathToFileURL(modulePath).href);
const provider = (url, prefix) => createConsulProvider({ url, prefix, lockDelayMs: 1000 });

if (values.role === 'holder') await holder(values.url, Number(values.hold));
else await main();

/** The child: takes `count` locks in prefix "bench/full", then answers CPU readings until told to quit. */
async function holder(url, count) {
  const locks = provider(url, 'bench/full');
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const key = `held-${next++}`;
      if (!(await locks.tryAcquire(key, { ttlMs: 20_000 }))) throw new Error(`${key} was not free`);
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  process.send({ ready: count });
  process.on('disconnect', () => process.exit(0));
  process.on('message', async (message) => {
    if (message === 'cpu') process.send({ cpu: process.cpuUsage() });
    if (message === 'quit') {
      await locks.close();
      process.exit(0);
    }
  });
}

async function main() {
  const consul = await startConsulDev();
  const rounds = Number(values.rounds);
  const sliceMs = Number(values.slice);
  try {
    console.log(`adapter: ${modulePath}`);
    const child = fork(new URL(import.meta.url).pathname, [modulePath, '--role', 'holder', '--url', consul.httpUrl, '--hold', values.hold]);
    const fromChild = () => new Promise((done) => child.once('message', done));
    const started = performance.now();
    const ready = await fromChild();
    console.log(`holder took ${ready.ready} locks in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const cpu = async () => {
      child.send('cpu');
      const { cpu } = await fromChild();
      return (cpu.user + cpu.system) / 1000;
    };

    const idleFrom = await cpu();
    const idleAt = performance.now();
    await sleep(sliceMs);
    const idle = ((await cpu()) - idleFrom) / (performance.now() - idleAt);

    const workers = { empty: provider(consul.httpUrl, 'bench/empty'), full: provider(consul.httpUrl, 'bench/full') };
    const ops = { empty: 0, full: 0 };
    const ms = { empty: 0, full: 0 };
    const busyFrom = await cpu();
    const busyAt = performance.now();
    for (let round = 0; round < rounds; round++) {
      for (const prefix of ['empty', 'full']) {
        const slice = await loop([workers[prefix]], 'worker-key', sliceMs);
        ops[prefix] += slice.grants;
        ms[prefix] += slice.ms;
      }
    }
    const busy = ((await cpu()) - busyFrom) / (performance.now() - busyAt);
    await Promise.all(Object.values(workers).map((locks) => locks.close()));
    child.send('quit');
    console.log(`acquire+release, empty prefix: ${rate(ops.empty, ms.empty)} ops/s`);
    console.log(`acquire+release, prefix where another provider holds ${ready.ready}: ${rate(ops.full, ms.full)} ops/s`);
    console.log(`the holder's CPU: ${(idle * 100).toFixed(1)} % of a core alone, ${(busy * 100).toFixed(1)} % while the others worked`);

    for (const [what, make] of [
      ['1 contender', () => [provider(consul.httpUrl, 'bench/one')]],
      ['64 contenders, one provider each', () => Array.from({ length: 64 }, () => provider(consul.httpUrl, 'bench/many'))],
      ['64 contenders in one provider', () => Array(64).fill(provider(consul.httpUrl, 'bench/local'))],
    ]) {
      const contenders = make();
      const slice = await loop(contenders, 'contended', sliceMs * rounds);
      await Promise.all([...new Set(contenders)].map((locks) => locks.close()));
      console.log(
        `${what} on one key: ${rate(slice.grants, slice.ms)} grants/s, wait p50 ${slice.p50.toFixed(1)} ms, p99 ${slice.p99.toFixed(1)} ms`,
      );
    }
  } finally {
    await consul.stop();
  }
}

/** Each contender loops acquire -> release on `key` for `ms`; grants counted within the slice. */
async function loop(contenders, key, ms) {
  const stop = AbortSignal.timeout(ms);
  setMaxListeners(0, stop);
  const waits = [];
  const start = performance.now();
  let grants = 0;
  await Promise.all(
    contenders.map(async (locks) => {
      while (!stop.aborted) {
        const asked = performance.now();
        const lock = await locks.acquire(key, { waitMs: 30_000, signal: stop }).catch(() => null);
        if (!lock) continue;
        waits.push(performance.now() - asked);
        grants++;
        await lock.release();
      }
    }),
  );
  waits.sort((a, b) => a - b);
  const at = (p) => waits[Math.min(waits.length - 1, Math.floor((p / 100) * waits.length))] ?? Number.NaN;
  return { grants, ms: Math.min(ms, performance.now() - start), p50: at(50), p99: at(99) };
}

function rate(count, ms) {
  return Math.round(count / (ms / 1000));
}

function sleep(ms) {
  return new Promise((done) => setTimeout(done, ms));
}
