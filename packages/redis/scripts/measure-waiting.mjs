#!/usr/bin/env node
// Contention and per-grant cost of the Redis adapter on a private redis-server (issue 15). Not a
// test: it prints figures. Build first (npm run build in packages/redis), then
//   node scripts/measure-waiting.mjs [label=path/to/index.js ...] [--seconds=5]
// Without arguments it measures this package's dist/index.js. Several implementations (say an
// older build) are measured on the same server in alternating order, so load affects them alike.
import { pathToFileURL } from 'node:url';
import { startRedis } from '@holdfast/test-harness/servers';
import { Redis } from 'ioredis';

const args = process.argv.slice(2);
const seconds = Number(args.find((arg) => arg.startsWith('--seconds='))?.slice(10) ?? 5);
const implementations = args.filter((arg) => !arg.startsWith('--')).map((arg) => arg.split('='));
if (implementations.length === 0) implementations.push(['this build', new URL('../dist/index.js', import.meta.url).pathname]);

const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

const server = await startRedis();
let keys = 0;
const newKey = (what) => `measure/${process.pid}/${what}-${++keys}`;

/**
 * Counts the commands clients send (not those scripts run: MONITOR names their source "lua"),
 * excluding the monitor's own connection. MONITOR slows the server, so rates are measured without it.
 */
async function countCommands() {
  const client = new Redis(server.url);
  const monitor = await client.monitor();
  const counts = {};
  monitor.on('monitor', (_time, args, source) => {
    if (source === 'lua') return;
    const name = String(args[0]).toLowerCase();
    counts[name] = (counts[name] ?? 0) + 1;
  });
  return {
    /** Stops counting; the counts per operation, busiest first. */
    async stop(operations) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      monitor.disconnect();
      client.disconnect();
      const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
      const total = entries.reduce((sum, [, calls]) => sum + calls, 0);
      return { perOp: total / operations, detail: entries.map(([name, calls]) => `${name} ${(calls / operations).toFixed(2)}`).join(', ') };
    },
  };
}

/**
 * `contenders` loops spread over `providerCount` providers, each acquiring and releasing one key
 * for `ms`. With `count`, the client commands are counted (under MONITOR) instead of timed.
 */
async function contended(createRedisProvider, providerCount, contenders, ms, count = false) {
  const providers = Array.from({ length: providerCount }, () => createRedisProvider({ url: server.url }));
  const key = newKey('contended');
  try {
    // Connect, load the scripts and open the subscriptions before measuring.
    for (const provider of providers) {
      const held = await provider.tryAcquire(key);
      const waited = provider.acquire(key, { waitMs: 10_000 });
      await held.release();
      await (await waited).release();
    }
    const counter = count ? await countCommands() : undefined;
    const started = performance.now();
    const stopAt = started + ms;
    let grants = 0;
    const waits = [];
    const perContender = new Array(contenders).fill(0);
    await Promise.all(
      Array.from({ length: contenders }, async (_, i) => {
        const provider = providers[i % providerCount];
        while (performance.now() < stopAt) {
          const asked = performance.now();
          const lock = await provider.acquire(key, { waitMs: 60_000, ttlMs: 10_000 });
          waits.push(performance.now() - asked);
          grants++;
          perContender[i]++;
          await lock.release();
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    if (counter) return counter.stop(grants);
    waits.sort((a, b) => a - b);
    return {
      grantsPerSecond: grants / elapsed,
      waitP50: waits[Math.floor(waits.length / 2)],
      waitP99: waits[Math.floor(waits.length * 0.99)],
      busiestShare: Math.max(...perContender) / grants,
    };
  } finally {
    await Promise.all(providers.map((provider) => provider.close()));
  }
}

/** Sequential tryAcquire+release on one provider, in `slices` slices alternating with the raw floor. */
async function uncontended(createRedisProvider, ms, slices = 6) {
  const provider = createRedisProvider({ url: server.url });
  const raw = new Redis(server.url);
  const sha = await raw.script('LOAD', RELEASE);
  const key = newKey('uncontended');
  const rates = { holdfast: 0, raw: 0 };
  const holdfastOnce = async () => {
    const lock = await provider.tryAcquire(key, { ttlMs: 10_000 });
    if (!lock) throw new Error('uncontended tryAcquire found the key busy');
    await lock.release();
  };
  let ops = 0;
  const rawOnce = async () => {
    const value = `v${++ops}`;
    if ((await raw.set(key, value, 'PX', 10_000, 'NX')) !== 'OK') throw new Error('raw SET NX found the key busy');
    await raw.evalsha(sha, 1, key, value);
  };
  const rate = async (once) => {
    let done = 0;
    const started = performance.now();
    while (performance.now() - started < ms / slices / 2) {
      await once();
      done++;
    }
    return (done / (performance.now() - started)) * 1000;
  };
  try {
    await holdfastOnce();
    for (let slice = 0; slice < slices; slice++) {
      rates.holdfast += (await rate(holdfastOnce)) / slices;
      rates.raw += (await rate(rawOnce)) / slices;
    }
    const counter = await countCommands();
    for (let i = 0; i < 200; i++) await holdfastOnce();
    return { ...rates, ...(await counter.stop(200)) };
  } finally {
    await provider.close();
    raw.disconnect();
  }
}

const round = (n) => Math.round(n).toLocaleString('en');
try {
  const loaded = [];
  for (const [label, path] of implementations) loaded.push([label, (await import(pathToFileURL(path).href)).createRedisProvider]);
  console.log(
    `redis-server at ${server.url}; ${seconds} s per measurement; load average ${(await import('node:os'))
      .loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
  );
  const ms = seconds * 1000;
  for (const [label, create] of loaded) {
    const one = await contended(create, 1, 1, ms);
    const commands = await contended(create, 1, 1, ms / 4, true);
    console.log(
      `${label}: 1 contender: ${round(one.grantsPerSecond)} grants/s; ${commands.perOp.toFixed(2)} client commands/grant (${commands.detail})`,
    );
  }
  for (const providers of [1, 4]) {
    for (const [label, create] of loaded) {
      const many = await contended(create, providers, 64, ms);
      const commands = await contended(create, providers, 64, ms / 2, true);
      console.log(
        `${label}: 64 contenders on ${providers} provider(s): ${round(many.grantsPerSecond)} grants/s, wait p50 ${many.waitP50.toFixed(1)} ms, p99 ${many.waitP99.toFixed(1)} ms, busiest contender ${(100 * many.busiestShare).toFixed(1)} % of grants; ` +
          `${commands.perOp.toFixed(2)} client commands/grant (${commands.detail})`,
      );
    }
  }
  for (const [label, create] of loaded) {
    const flat = await uncontended(create, ms);
    console.log(
      `${label}: uncontended tryAcquire+release ${round(flat.holdfast)}/s, raw SET NX PX + EVALSHA ${round(flat.raw)}/s, ratio ${(flat.holdfast / flat.raw).toFixed(2)}x; ` +
        `${flat.perOp.toFixed(2)} client commands/op (${flat.detail})`,
    );
  }
} finally {
  await server.stop();
}
