#!/usr/bin/env node
// The Redis server's own cost of one uncontended grant + release (issue 23): this build's two
// scripts (dist/, build first), beside the peers' floor (SET NX PX, then a compare-and-delete
// script), pipelined on a private redis-server so that client time does not count. Prints, per pair,
// the server CPU (INFO cpu, user + system) and the time commandstats gives each script call. The
// grant script is also measured with the fence counter alone (no clock floor: HINCRBY), to show what
// the floor that keeps tokens increasing across a failover costs.
// Not a test: it prints figures. `node scripts/measure-server-cost.mjs [--pairs=20000] [--keys=1000]`
import { startRedisSet } from '@holdfast/test-harness/servers';
import { Redis } from 'ioredis';
import { holderValue } from '../dist/holder-record.js';
import { KeyNames } from '../dist/key-names.js';
import { LuaScript } from '../dist/lua-script.js';
import { ACQUIRE_IN_TURN } from '../dist/queue-scripts.js';
import { RELEASE } from '../dist/scripts.js';

const option = (name, fallback) => Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const pairs = option('pairs', 20_000);
const width = option('keys', 1000);
const BATCH = 200;
const DEL = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;
/** The grant with the fence counter alone (FENCE_BUMP's counterOnly, as a quorum's nodes run it). */
const CLOCK_FLOORED = 'bump(KEYS[2], nil, KEYS[5])';
if (ACQUIRE_IN_TURN.source.split(CLOCK_FLOORED).length !== 3) throw new Error(`the grant script no longer calls ${CLOCK_FLOORED} twice`);
const COUNTER_ONLY_GRANT = new LuaScript(ACQUIRE_IN_TURN.source.replaceAll(CLOCK_FLOORED, 'bump(KEYS[2], nil, KEYS[5], true)'));

const set = await startRedisSet(1);
const redis = new Redis(set.urls[0]);
try {
  const names = new KeyNames('holdfast:', 0);
  const delSha = await redis.script('LOAD', DEL);
  await ACQUIRE_IN_TURN.load(redis);
  await COUNTER_ONLY_GRANT.load(redis);
  await RELEASE.load(redis);
  const holdfastCase = (grantScript) => ({
    grant: (p, key, id) => {
      const k = names.of(key);
      grantScript.queue(
        p,
        [k.lock, k.fence, k.queue, k.queueExpiries, ...k.legacyFence],
        [id, 30_000, holderValue(id, Date.now(), 'host/1234/abcdef', undefined)],
      );
    },
    release: (p, key, id) => {
      const k = names.of(key);
      RELEASE.queue(p, [k.lock, k.queue, k.queueExpiries], [id, k.channel]);
    },
  });
  const cases = {
    'peers: SET NX PX + compare-delete': {
      grant: (p, key, id) => p.set(key, id, 'PX', 30_000, 'NX'),
      release: (p, key, id) => p.evalsha(delSha, 1, key, id),
    },
    'holdfast: grant + release scripts': holdfastCase(ACQUIRE_IN_TURN),
    'holdfast, fence counter alone': holdfastCase(COUNTER_ONLY_GRANT),
  };
  for (let round = 0; round < 2; round++) {
    for (const [label, { grant, release }] of Object.entries(cases)) {
      await redis.config('RESETSTAT');
      const before = await cpuMicros(redis);
      for (let batch = 0; batch < pairs / BATCH; batch++) {
        const held = [];
        let pipeline = redis.pipeline();
        for (let i = 0; i < BATCH; i++) {
          const key = `cost/${(batch * BATCH + i) % width}`;
          const id = `id-${batch}-${i}-${Math.random().toString(36).slice(2)}`;
          held.push([key, id]);
          grant(pipeline, key, id);
        }
        await pipeline.exec();
        pipeline = redis.pipeline();
        for (const [key, id] of held) release(pipeline, key, id);
        await pipeline.exec();
      }
      const cpu = (await cpuMicros(redis)) - before;
      const stats = await commandStats(redis);
      const scripts = ['evalsha', 'eval'].map((name) => stats.get(name)).filter(Boolean);
      const perScript = scripts.map((stat) => `${(stat.usec / stat.calls).toFixed(2)} us per ${stat.name}`).join(', ');
      const inner = [...stats.values()].filter((stat) => !['evalsha', 'eval', 'info', 'config|resetstat'].includes(stat.name));
      const commands = inner.reduce((sum, stat) => sum + stat.calls, 0) / pairs;
      console.log(
        `${label.padEnd(36)} ${(cpu / pairs).toFixed(2).padStart(6)} us server CPU per pair; ${commands.toFixed(1)} commands; ${perScript}`,
      );
    }
  }
} finally {
  redis.disconnect();
  await set.stop();
}

async function cpuMicros(client) {
  const info = await client.info('cpu');
  const seconds = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)[1]);
  return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6;
}

async function commandStats(client) {
  const stats = new Map();
  for (const [, name, calls, usec] of (await client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm))
    stats.set(name, { name, calls: Number(calls), usec: Number(usec) });
  return stats;
}
