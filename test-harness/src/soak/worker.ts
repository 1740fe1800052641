/**
 * A soak worker process: loops acquire -> begin/write/write/end at the fenced store -> release on
 * one of the keys until the store says stop. The runner stops (SIGSTOP) and resumes it at random.
 * Exits when its stdin closes, so it never outlives the runner.
 */
import { createLockProvider, ErrorCode, type Lock } from '@holdfast/core';
import type { StoreRequest } from './fenced-store.js';
import { StoreClient } from './store-client.js';

interface WorkerSpec {
  worker: number;
  url: string;
  store: { host: string; port: number };
  keys: string[];
  ttlMs: number;
  waitMs: number;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as WorkerSpec;
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();

const store = await StoreClient.connect(spec.store);
const provider = await createLockProvider(spec.url);
let stop = false;
let grants = 0;
const failures: Record<string, number> = {};

while (!stop) {
  const key = spec.keys[Math.floor(Math.random() * spec.keys.length)]!;
  let lock: Lock;
  const requestedAt = Date.now();
  try {
    lock = await provider.acquire(key, { ttlMs: spec.ttlMs, waitMs: spec.waitMs, reason: `soak worker ${spec.worker}` });
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'unknown';
    failures[code] = (failures[code] ?? 0) + 1;
    if (code !== ErrorCode.Timeout && code !== ErrorCode.Backend) throw error;
    continue;
  }
  const grant = `${spec.worker}:${++grants}`;
  const request = (op: StoreRequest['op']): StoreRequest => ({
    op,
    worker: spec.worker,
    grant,
    key,
    token: String(lock.token),
    requestedAt,
  });
  // Begin and two writes under the lock, each only while the holder believes it holds; a pause
  // between them is what fencing must absorb.
  const begun: { ok: boolean; stop: boolean } = lock.signal.aborted ? { ok: false, stop } : await store.send(request('begin'));
  stop = begun.stop;
  for (let write = 0; write < 2 && begun.ok && !lock.signal.aborted; write++) stop = (await store.send(request('write'))).stop || stop;
  const lost = lock.signal.aborted && (lock.signal.reason as { code?: string } | undefined)?.code === ErrorCode.Lost;
  stop = (await store.send(request(lost ? 'lost' : 'end'))).stop || stop;
  await lock.release().catch(() => undefined);
}
await provider.close();
store.close();
process.stdout.write(`${JSON.stringify({ worker: spec.worker, grants, failures })}\n`);
process.exit(0);
