#!/usr/bin/env node
// Steady contention on one Consul key, measured on a dev agent the harness starts (not a test):
//   node scripts/measure-contention.mjs [label=path/to/dist/index.js ...] [--seconds 4] [--rounds 2] [--contenders 1,64]
// n contenders (one provider each, all in this process) loop acquire -> release on one key; per cell:
// grants/s, wait p50/p99, the busiest contender's share, the HTTP requests sent per grant by kind, and the
// CPU time per grant of this process and of the agent (read from /proc: Linux).
// Several builds (say another worktree's packages/consul/dist/index.js) take turns, cell by cell, so load hits them alike.
import { execFileSync } from 'node:child_process';
import { subscribe } from 'node:diagnostics_channel';
import { setMaxListeners } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { startConsulDev } from '@holdfast/test-harness/servers';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seconds: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '2' },
    contenders: { type: 'string', default: '1,64' },
  },
});
const builds = (positionals.length > 0 ? positionals : [`this build=${new URL('../dist/index.js', import.meta.url).pathname}`]).map(
  (arg) => {
    const [label, path] = arg.includes('=') ? arg.split('=') : [arg, arg];
    return { label, path: resolve(path) };
  },
);
for (const build of builds) build.module = await import(pathToFileURL(build.path).href);

/** Requests by kind while counting is on: method, path shape, blocking or not. */
let counts;
subscribe('http.client.request.start', ({ request }) => {
  if (!counts) return;
  const path = request.path;
  const blocking = /[?&]index=/.test(path) ? ' blocking' : '';
  const shape = path
    .replace(/\?.*/, '')
    .replace(/^\/v1\/kv\/.*\.queue\/.*/, '/v1/kv/<queue>')
    .replace(/^\/v1\/kv\/(?!<queue>).+/, '/v1/kv/<key>')
    .replace(/^\/v1\/session\/(renew|destroy|info)\/.+/, '/v1/session/$1');
  const kind = `${request.method} ${shape}${blocking}`;
  counts.set(kind, (counts.get(kind) ?? 0) + 1);
});

const consul = await startConsulDev();
/** The agent's CPU time (ms), from /proc: a child of this process. */
const agentPids = execFileSync('ps', ['-o', 'pid=', '--ppid', String(process.pid)])
  .toString()
  .trim()
  .split(/\s+/)
  .filter((pid) => pid && existsSync(`/proc/${pid}/stat`));
const agentCpuMs = () =>
  agentPids.reduce((sum, pid) => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ');
    return sum + ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  }, 0);
const ownCpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
let cell = 0;
try {
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const n of values.contenders.split(',').map(Number)) {
      for (const build of builds) {
        const result = await contended(build.module, n, Number(values.seconds) * 1000);
        const perGrant = (calls) => (calls / result.grants).toFixed(2);
        const total = [...result.counts.values()].reduce((sum, calls) => sum + calls, 0);
        const detail = [...result.counts].sort((a, b) => b[1] - a[1]).map(([kind, calls]) => `${perGrant(calls)} ${kind}`);
        console.log(
          `${build.label.padEnd(10)} n=${String(n).padStart(2)}: ${result.rate.toFixed(0).padStart(4)} grants/s, ` +
            `wait p50 ${result.p50.toFixed(1)} p99 ${result.p99.toFixed(1)} ms, busiest ${result.busiest.toFixed(1)} %, ` +
            `CPU ms/grant node ${(result.cpu.own / result.grants).toFixed(2)} agent ${(result.cpu.agent / result.grants).toFixed(2)}, ` +
            `${perGrant(total)} requests/grant (${detail.join(', ')})`,
        );
      }
    }
  }
} finally {
  await consul.stop();
}

async function contended({ createConsulProvider }, n, ms) {
  const prefix = `measure/${++cell}`;
  const providers = Array.from({ length: n }, () => createConsulProvider({ url: consul.httpUrl, prefix, lockDelayMs: 1000 }));
  const key = 'contended';
  try {
    // Sessions, sockets and the queue session exist before measuring.
    for (const provider of providers) {
      const held = await provider.tryAcquire(key);
      await held.release();
    }
    if (n > 1) {
      const held = await providers[0].tryAcquire(key);
      const waited = providers[1].acquire(key, { waitMs: 10_000 });
      await new Promise((done) => setTimeout(done, 50));
      await held.release();
      await (await waited).release();
    }
    const stop = AbortSignal.timeout(ms);
    setMaxListeners(0, stop);
    const waits = [];
    const perContender = new Array(n).fill(0);
    let grants = 0;
    counts = new Map();
    const cpuFrom = { own: ownCpuMs(), agent: agentCpuMs() };
    const started = performance.now();
    await Promise.all(
      providers.map(async (provider, i) => {
        while (!stop.aborted) {
          const asked = performance.now();
          const lock = await provider.acquire(key, { waitMs: 30_000, signal: stop }).catch(() => null);
          if (!lock) continue;
          if (!stop.aborted) {
            waits.push(performance.now() - asked);
            grants++;
            perContender[i]++;
          }
          await new Promise(setImmediate);
          await lock.release();
        }
      }),
    );
    const cpu = { own: ownCpuMs() - cpuFrom.own, agent: agentCpuMs() - cpuFrom.agent };
    const seen = counts;
    counts = undefined;
    const elapsed = Math.min(ms, performance.now() - started);
    waits.sort((a, b) => a - b);
    const at = (p) => waits[Math.min(waits.length - 1, Math.floor((p / 100) * waits.length))] ?? Number.NaN;
    return {
      rate: grants / (elapsed / 1000),
      grants,
      p50: at(50),
      p99: at(99),
      busiest: (Math.max(...perContender) / grants) * 100,
      counts: seen,
      cpu,
    };
  } finally {
    await Promise.all(providers.map((provider) => provider.close()));
  }
}
