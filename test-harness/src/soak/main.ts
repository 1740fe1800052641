/**
 * The soak test: `npm run soak -- <backend> [--mode lock|read-write|multi-key --workers N --grants M ...]`.
 * Starts (or finds, see startSoakServer) a server or a Redis topology, runs N worker processes that
 * loop acquire (a lock, a read-write grant or several keys) -> fenced writes -> release against a
 * fenced store in this process, stops workers at random for longer than the TTL, and prints the
 * figures as JSON. Exits 1 if exclusion or fencing broke, a multi-key wait ran out, or a worker died.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { ErrorCode, redactUrl } from '@holdfast/core';
import { FencedStore } from './fenced-store.js';
import { Pauser } from './pauser.js';
import { BACKEND_DEFAULTS, parseSoakArgs } from './settings.js';
import { startSoakServer } from './soak-server.js';

const WORKER = fileURLToPath(new URL('./worker.js', import.meta.url));

function withOptions(url: string, options: string): string {
  if (!options) return url;
  const parsed = new URL(url);
  for (const [name, value] of new URLSearchParams(options)) parsed.searchParams.set(name, value);
  return parsed.href;
}

const parsed = parseSoakArgs(process.argv.slice(2));
if ('skip' in parsed) {
  process.stdout.write(`${JSON.stringify({ backend: process.argv[2], skipped: parsed.skip })}\n`);
  process.exit(0);
}
const settings = parsed;
const server = await startSoakServer(settings.backend);
const url = withOptions(withOptions(server.url, BACKEND_DEFAULTS[settings.backend].urlOptions), settings.urlOptions);
const store = await FencedStore.start();
store.stopAt(settings.grants);
const run = Math.random().toString(36).slice(2, 8);
const keys = Array.from({ length: settings.keys }, (_, i) => `holdfast-soak/${run}/key-${i}`);
const started = performance.now();
process.stderr.write(
  `[soak] ${settings.backend} (${settings.mode}) at ${redactUrl(url)}: ${settings.workers} workers, ${settings.keys} keys, ${settings.grants} grants\n`,
);

const workers: ChildProcess[] = [];
const workerReports: unknown[] = [];
for (let worker = 0; worker < settings.workers; worker++) {
  const spec = {
    worker,
    url,
    store: store.address,
    keys,
    mode: settings.mode,
    ttlMs: settings.ttlMs,
    holdMs: settings.holdMs,
    waitMs: settings.ttlMs * 3 + settings.pauseMs[1] + 30_000,
  };
  const child = spawn(process.execPath, [WORKER, JSON.stringify(spec)], { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdout!.setEncoding('utf8').on('data', (text: string) => {
    for (const line of text.split('\n').filter(Boolean)) workerReports.push(JSON.parse(line));
  });
  workers.push(child);
}
const pauser = new Pauser(workers, store, settings.pauseMs, settings.pauseEveryMs);
// Interrupted: resume and end the workers (a stopped one cannot notice its pipe closing) and the server.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    pauser.stop();
    for (const child of workers) child.kill('SIGKILL');
    void server.stop().finally(() => process.exit(130));
  });
}
const progress = setInterval(
  () => process.stderr.write(`[soak] ${store.figures.grants} grants, ${pauser.figures.pauses} pauses\n`),
  10_000,
);

// A worker that dies of an error it did not expect ends the run early: counted, and the run fails.
let workersFailed = 0;
for (const child of workers) {
  child.once('exit', (code) => {
    if (code !== 0 && code !== null) workersFailed++;
  });
}
const allExited = Promise.all(workers.map((child) => (child.exitCode === null ? once(child, 'exit') : undefined)));
let timer: NodeJS.Timeout | undefined;
const finished = await Promise.race([
  allExited.then(() => true),
  new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), settings.maxSeconds * 1000))),
]);
clearTimeout(timer);
clearInterval(progress);
pauser.stop();
for (const child of workers) {
  if (child.exitCode === null) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
}
await store.close();
await server.stop();

const f = store.figures;
const timeouts = (workerReports as { failures?: Record<string, number> }[]).reduce(
  (sum, report) => sum + (report.failures?.[ErrorCode.Timeout] ?? 0),
  0,
);
// Overlapping sets taken in one canonical order never wait in a cycle: a multi-key wait that runs out
// (each may wait several TTLs and the longest pause) is taken for a deadlock.
const ok =
  finished &&
  workersFailed === 0 &&
  f.overlaps === 0 &&
  f.staleWritesAccepted === 0 &&
  f.tokenRegressions === 0 &&
  (settings.mode !== 'multi-key' || timeouts === 0);
const report = {
  backend: settings.backend,
  mode: settings.mode,
  server: server.server,
  completed: finished,
  workers: settings.workers,
  keys: settings.keys,
  ttlMs: settings.ttlMs,
  pauseMs: settings.pauseMs,
  holdMs: settings.holdMs,
  grantsTarget: settings.grants,
  ...f,
  ...pauser.figures,
  timeouts,
  workersFailed,
  overlapDetails: store.overlapDetails,
  workerReports,
  seconds: Math.round((performance.now() - started) / 100) / 10,
  ok,
};
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
process.exit(ok ? 0 : 1);
