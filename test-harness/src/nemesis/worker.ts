/**
 * A nemesis worker process, started inside a client namespace: loops acquire -> hold for a while,
 * writing every so often -> isHeld -> release on a random key, and reports each step as a JSON line on
 * stdout (a pipe, which no partition cuts). Exits when its stdin closes, so it never outlives the runner.
 */
import { subscribe } from 'node:diagnostics_channel';
import { CHANNELS, createLockProvider, ErrorCode, type Lock } from '@holdfast/core';
import type { WorkerEvent, WorkerSpec } from './events.js';

const spec = JSON.parse(process.argv[2] ?? '{}') as WorkerSpec;
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();

// Stamped here, on the machine's monotonic clock (shared by every process), not when the runner reads
// the line: a runner stalled by its own fault steps read 5 s of events at once, and stamped on arrival
// an old holder's earlier writes looked like an overlap with a later grant.
const emit = (event: WorkerEvent): void => {
  process.stdout.write(`${JSON.stringify({ ...event, t: Number(process.hrtime.bigint()) / 1e6 })}\n`);
};
const codeOf = (error: unknown): string => (error as { code?: string }).code ?? 'unknown';

async function call<T>(name: 'acquire' | 'isHeld' | 'release', work: () => Promise<T>): Promise<T> {
  emit({ op: 'call', name, phase: 'start' });
  const started = performance.now();
  try {
    const result = await work();
    emit({ op: 'call', name, phase: 'end', ms: performance.now() - started });
    return result;
  } catch (error) {
    emit({ op: 'call', name, phase: 'end', ms: performance.now() - started, code: codeOf(error) });
    throw error;
  }
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Why each of this worker's locks was lost, by token, as core published it (`holdfast:lost`). */
const lossReasons = new Map<string, string>();
subscribe(CHANNELS.lost, (message) => {
  const { token, reason } = message as { token?: unknown; reason?: unknown };
  lossReasons.set(String(token), String(reason));
});

const provider = await createLockProvider(spec.url, spec.providerOptions ?? {});
let grants = 0;
const seen = new Set<string>();
for (;;) {
  const key = spec.keys[Math.floor(Math.random() * spec.keys.length)]!;
  const requestedAt = Date.now();
  let lock: Lock;
  try {
    lock = await call('acquire', () =>
      provider.acquire(key, { ttlMs: spec.ttlMs, waitMs: spec.waitMs, reason: `nemesis worker ${spec.worker}` }),
    );
  } catch (error) {
    if (codeOf(error) !== ErrorCode.Timeout && codeOf(error) !== ErrorCode.Backend) throw error;
    // The first failure of each kind, for the report (the runner keeps a worker's stderr).
    if (!seen.has(codeOf(error))) process.stderr.write(`${codeOf(error)}: ${(error as Error).message}\n`);
    seen.add(codeOf(error));
    // Cut off, the backend fails at once: do not spin.
    await sleep(200);
    continue;
  }
  const grant = `${spec.worker}:${++grants}`;
  const about = { grant, key, token: String(lock.token), requestedAt };
  emit({ op: 'begin', ...about });
  let lostSaid = false;
  // Said the moment the signal fires, not at the next write: the check measures the overlap from here.
  const onAbort = (): void => {
    if (spec.ignoreSignal || codeOf(lock.signal.reason) !== ErrorCode.Lost) return;
    lostSaid = true;
    emit({ op: 'lost', ...about });
  };
  lock.signal.addEventListener('abort', onAbort, { once: true });
  const [low, high] = spec.holdMs;
  const until = performance.now() + low + Math.random() * (high - low);
  const watching = spec.ignoreSignal ? undefined : lock.signal;
  while (performance.now() < until && !watching?.aborted) {
    emit({ op: 'write', ...about });
    await sleep(Math.min(spec.writeEveryMs, Math.max(0, until - performance.now())), watching);
  }
  // Unhooked before asking: a loss that only isHeld() reveals is one the signal never told.
  lock.signal.removeEventListener('abort', onAbort);
  if (!lostSaid) {
    emit({ op: 'end', ...about });
    if (!spec.ignoreSignal && !lock.signal.aborted) {
      const held = await call('isHeld', () => lock.isHeld()).catch(() => null);
      // The lease may run out while isHeld() waits (behind a renewal's WAIT, or cut off until its call
      // timeout): the signal says so on its own then, and isHeld() answers false or fails. A loss
      // isHeld() itself found is `not-held`.
      const reason = lossReasons.get(String(lock.token));
      const toldMeanwhile = held !== true && reason !== undefined && reason !== 'not-held' ? reason : undefined;
      emit({ op: 'asked', grant, held, ...(toldMeanwhile ? { toldMeanwhile } : {}) });
    }
  }
  await call('release', () => lock.release()).catch(() => undefined);
}
