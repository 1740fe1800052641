// What a semaphore slot costs on Consul, measured on a dev agent the harness starts (not a test):
//   node scripts/slot-cost.mjs [path/to/dist/index.js] [--slice 3000] [--rounds 3]
// 1. Uncontended, alternating slices: a plain lock's tryAcquire+release vs a slot's (semaphore of 2): ops/s.
// 2. Contention: 8 workers over 4 providers loop acquire -> hold 5 ms -> release on one semaphore of 2:
//    slot grants/s, the most holders ever seen at once (must stay 2), and the sessions created
//    (PUT /v1/session/create, counted by a loopback relay in front of the agent).

import { createServer, request } from 'node:http';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { startConsulDev } from '@holdfast/test-harness/servers';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { slice: { type: 'string', default: '3000' }, rounds: { type: 'string', default: '3' } },
});
const modulePath = resolve(positionals[0] ?? new URL('../dist/index.js', import.meta.url).pathname);
const { createConsulProvider } = await import(pathToFileURL(modulePath).href);
const sliceMs = Number(values.slice);
const rounds = Number(values.rounds);

const consul = await startConsulDev();
const agent = new URL(consul.httpUrl);
let sessionCreates = 0;
const relay = createServer((incoming, answer) => {
  if (incoming.method === 'PUT' && incoming.url?.startsWith('/v1/session/create')) sessionCreates++;
  const outgoing = request(
    { host: agent.hostname, port: agent.port, path: incoming.url, method: incoming.method, headers: incoming.headers },
    (response) => {
      answer.writeHead(response.statusCode ?? 502, response.headers);
      response.pipe(answer);
    },
  );
  outgoing.on('error', () => answer.destroy());
  incoming.pipe(outgoing);
});
await new Promise((listening) => relay.listen(0, '127.0.0.1', listening));
const relayUrl = `http://127.0.0.1:${relay.address().port}`;
const providers = [];
const provider = () => {
  const created = createConsulProvider({ url: relayUrl, prefix: 'bench', lockDelayMs: 1000 });
  providers.push(created);
  return created;
};
try {
  console.log(`adapter: ${modulePath}`);
  const locks = provider();
  const subjects = {
    lock: async () => (await locks.tryAcquire('plain')).release(),
    slot: async () => (await locks.semaphore('slots', 2).tryAcquire()).release(),
  };
  const ops = { lock: [], slot: [] };
  for (let round = 0; round < rounds; round++) {
    for (const [name, once] of Object.entries(subjects)) ops[name].push(await perSecond(once, sliceMs));
  }
  for (const [name, rates] of Object.entries(ops))
    console.log(`uncontended ${name} tryAcquire+release: ${rates.map(Math.round).join(', ')} ops/s`);

  const semaphores = Array.from({ length: 4 }, () => provider().semaphore('contended', 2));
  let holding = 0;
  let most = 0;
  let grants = 0;
  const until = performance.now() + sliceMs * rounds;
  const worker = async (semaphore) => {
    while (performance.now() < until) {
      const slot = await semaphore.acquire({ waitMs: 10_000 });
      grants++;
      most = Math.max(most, ++holding);
      await new Promise((done) => setTimeout(done, 5));
      holding--;
      await slot.release();
    }
  };
  const started = performance.now();
  const createsBefore = sessionCreates;
  await Promise.all(semaphores.flatMap((semaphore) => [worker(semaphore), worker(semaphore)]));
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `8 workers in 4 providers on a semaphore of 2: ${Math.round(grants / seconds)} slot grants/s (${grants} in ${seconds.toFixed(1)} s), most holders at once: ${most}, sessions created: ${sessionCreates - createsBefore}`,
  );
  if (most > 2) process.exitCode = 1;
} finally {
  await Promise.all(providers.map((created) => created.close()));
  relay.close();
  await consul.stop();
}

async function perSecond(once, ms) {
  let count = 0;
  const started = performance.now();
  while (performance.now() - started < ms) {
    await once();
    count++;
  }
  return count / ((performance.now() - started) / 1000);
}
