import { parseArgs } from 'node:util';
import { ErrorCode, isHoldfastError, type LockProvider, redactUrl } from '@holdfast/core';
import { backendUrl, openProvider } from './backends.js';
import { FencedStore } from './fenced-store.js';
import { parsingFlags, positiveIntegerFlag } from './options.js';
import { formatMs, percentile, table } from './stats.js';
import { EXIT } from './usage.js';

interface KeyStats {
  acquisitions: number;
  waits: number[];
  handoffs: number[];
  minToken: bigint | undefined;
  maxToken: bigint | undefined;
  violations: number;
  /** When the last holder released, and whether someone was already waiting then. */
  releasedAt: number;
  waitingSince: number[];
}

/**
 * `holdfast demo`: workers, each with its own provider instance (standing for a process), contend
 * for a few keys and write to a fenced store inside the critical section.
 */
export async function demo(args: string[]): Promise<number> {
  const { values } = parsingFlags(() =>
    parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        backend: { type: 'string' },
        workers: { type: 'string' },
        keys: { type: 'string' },
        seconds: { type: 'string' },
      },
    }),
  );
  // A demo of contention inside one process: the in-process backend is its natural default.
  const url = backendUrl(values.backend, 'memory:');
  const workers = positiveIntegerFlag(values.workers, 'workers', 8);
  const keyCount = positiveIntegerFlag(values.keys, 'keys', 4);
  const seconds = positiveIntegerFlag(values.seconds, 'seconds', 5);
  const runId = Math.random().toString(36).slice(2, 8);
  const keys = Array.from({ length: keyCount }, (_, i) => `holdfast-demo/${runId}/key-${i}`);
  const stats = new Map(keys.map((key) => [key, newStats()]));
  const store = new FencedStore();
  const violations: string[] = [];
  const providers: LockProvider[] = [];
  for (let i = 0; i < workers; i++) providers.push(await openProvider(url, `demo-worker-${i}`));

  const started = performance.now();
  const endAt = started + seconds * 1000;
  const progress = startProgress(stats, started, seconds);
  console.log(`holdfast demo: ${workers} workers, ${keyCount} keys, ${seconds}s on ${providers[0]!.backend} (${redactUrl(url)})`);
  try {
    await Promise.all(
      providers.map(async (provider) => {
        while (performance.now() < endAt) {
          const key = keys[Math.floor(Math.random() * keys.length)]!;
          const entry = stats.get(key)!;
          const askedAt = performance.now();
          entry.waitingSince.push(askedAt);
          const lock = await provider.acquire(key, { waitMs: Math.max(0, endAt - askedAt) }).catch(nullOnTimeout);
          entry.waitingSince.splice(entry.waitingSince.indexOf(askedAt), 1);
          if (!lock) continue;
          const heldAt = performance.now();
          entry.acquisitions++;
          entry.waits.push(heldAt - askedAt);
          if (askedAt < entry.releasedAt) entry.handoffs.push(heldAt - entry.releasedAt);
          entry.minToken = entry.minToken === undefined || lock.token < entry.minToken ? lock.token : entry.minToken;
          entry.maxToken = entry.maxToken === undefined || lock.token > entry.maxToken ? lock.token : entry.maxToken;
          const problem = store.enter(key, lock.token);
          if (problem) {
            entry.violations++;
            violations.push(problem);
          }
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 2));
          store.leave(key);
          entry.releasedAt = performance.now();
          await lock.release();
        }
      }),
    );
  } finally {
    progress.stop();
    await Promise.allSettled(providers.map((provider) => provider.close()));
  }
  const total = [...stats.values()].reduce((sum, entry) => sum + entry.acquisitions, 0);
  const elapsedS = (performance.now() - started) / 1000;
  console.log(summary(stats));
  console.log(`\n${total} acquisitions in ${elapsedS.toFixed(1)}s (${Math.round(total / elapsedS)}/s), ${violations.length} violations`);
  for (const violation of violations.slice(0, 10)) console.log(`  violation: ${violation}`);
  return violations.length === 0 ? 0 : EXIT.violation;
}

function nullOnTimeout(error: unknown): null {
  if (isHoldfastError(error, ErrorCode.Timeout)) return null;
  throw error;
}

function newStats(): KeyStats {
  return {
    acquisitions: 0,
    waits: [],
    handoffs: [],
    minToken: undefined,
    maxToken: undefined,
    violations: 0,
    releasedAt: -Infinity,
    waitingSince: [],
  };
}

function summary(stats: Map<string, KeyStats>): string {
  const rows = [...stats].map(([key, s]) => [
    key.split('/').pop()!,
    String(s.acquisitions),
    formatMs(percentile(s.waits, 50)),
    formatMs(percentile(s.waits, 99)),
    formatMs(percentile(s.handoffs, 50)),
    formatMs(percentile(s.handoffs, 99)),
    s.minToken === undefined ? '-' : `${s.minToken}..${s.maxToken}`,
    String(s.violations),
  ]);
  return '\n' + table(['key', 'acquisitions', 'wait p50', 'wait p99', 'handoff p50', 'handoff p99', 'tokens', 'violations'], rows);
}

function startProgress(stats: Map<string, KeyStats>, started: number, seconds: number): { stop(): void } {
  if (!process.stdout.isTTY) return { stop: () => undefined };
  const timer = setInterval(() => {
    const total = [...stats.values()].reduce((sum, entry) => sum + entry.acquisitions, 0);
    const elapsed = (performance.now() - started) / 1000;
    process.stdout.write(
      `\r  ${elapsed.toFixed(1)}/${seconds}s  ${total} acquisitions  ${Math.round(total / Math.max(elapsed, 0.001))}/s   `,
    );
  }, 200);
  return {
    stop: () => {
      clearInterval(timer);
      process.stdout.write('\r\x1b[K');
    },
  };
}
