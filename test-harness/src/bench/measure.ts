import { setTimeout as sleep } from 'node:timers/promises';
import { percentile } from '../percentile.js';

export { sleep };

/**
 * Milliseconds on the machine's monotonic clock (process.hrtime: CLOCK_MONOTONIC on Linux), which every
 * process on the machine shares: a child's release time and this process's grant time compare directly.
 */
export function now(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export function summarize(samples: readonly number[]): { p50: number; p99: number } {
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/** A key no other run or subject uses. */
export function benchKey(...parts: (string | number)[]): string {
  return ['holdfast-bench', RUN_ID, ...parts.map((part) => String(part).replace(/[^\w.-]+/g, '-'))].join('/');
}

const RUN_ID = Math.random().toString(36).slice(2, 8);
