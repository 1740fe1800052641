import { percentile } from './percentile.js';

/** Runs `op` back to back for about `durationMs` (after a warm-up) and returns operations per second. */
export async function opsPerSecond(op: () => Promise<unknown>, durationMs = 2000): Promise<number> {
  const warmUntil = performance.now() + Math.min(300, durationMs / 4);
  while (performance.now() < warmUntil) await op();
  let count = 0;
  const start = performance.now();
  const end = start + durationMs;
  while (performance.now() < end) {
    await op();
    count++;
  }
  return count / ((performance.now() - start) / 1000);
}

export function summarize(samples: number[]): { p50: number; p99: number } {
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}
