/**
 * A soak worker process: loops take (a lock, a read-write grant or several keys, holding.ts) ->
 * begin/write/write/end of every held key at the fenced store -> release, until the store says stop.
 * The runner stops (SIGSTOP) and resumes it at random. Exits when its stdin closes, so it never
 * outlives the runner.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createLockProvider, ErrorCode } from '@holdfast/core';
import type { StoreRequest } from './fenced-store.js';
import { type Holding, type SoakMode, take } from './holding.js';
import { StoreClient } from './store-client.js';

interface WorkerSpec {
  worker: number;
  url: string;
  store: { host: string; port: number };
  keys: string[];
  mode: SoakMode;
  ttlMs: number;
  holdMs: number;
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
  let holding: Holding;
  const requestedAt = Date.now();
  try {
    holding = await take(provider, spec.mode, spec.keys, { ttlMs: spec.ttlMs, waitMs: spec.waitMs, reason: `soak worker ${spec.worker}` });
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'unknown';
    failures[code] = (failures[code] ?? 0) + 1;
    // A multi-key take whose first keys lapsed while it waited for the next (a pause) gives them all up: LockLostError.
    if (code !== ErrorCode.Timeout && code !== ErrorCode.Backend && code !== ErrorCode.Lost) throw error;
    continue;
  }
  const grant = `${spec.worker}:${++grants}`;
  const request = (op: StoreRequest['op'], held: Holding['keys'][number]): StoreRequest => ({
    op,
    worker: spec.worker,
    grant,
    key: held.key,
    token: String(held.token),
    mode: held.mode,
    requestedAt,
  });
  const { signal } = holding;
  // Begin and two writes of every key, each only while the holder believes it holds; a pause
  // between them is what fencing must absorb.
  const begun: boolean[] = [];
  for (const held of holding.keys) {
    const reply: { ok: boolean; stop: boolean } = signal.aborted ? { ok: false, stop } : await store.send(request('begin', held));
    begun.push(reply.ok);
    stop = reply.stop || stop;
  }
  for (let write = 0; write < 2; write++) {
    if (write === 1 && spec.holdMs > 0 && !signal.aborted) await sleep(spec.holdMs);
    for (const [at, held] of holding.keys.entries()) {
      if (begun[at] && !signal.aborted) stop = (await store.send(request('write', held))).stop || stop;
    }
  }
  // A multi-key holding's signal names the key that was lost; the others simply end.
  const reason = signal.aborted ? (signal.reason as { code?: string; key?: string } | undefined) : undefined;
  const lostKey = reason?.code === ErrorCode.Lost ? (reason.key ?? holding.keys[0]!.key) : undefined;
  for (const held of holding.keys) stop = (await store.send(request(held.key === lostKey ? 'lost' : 'end', held))).stop || stop;
  await holding.release().catch(() => undefined);
}
await provider.close();
store.close();
process.stdout.write(`${JSON.stringify({ worker: spec.worker, grants, failures })}\n`);
process.exit(0);
