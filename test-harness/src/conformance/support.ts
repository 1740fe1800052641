import { randomBytes } from 'node:crypto';
import type { Capabilities, LockProvider } from '@holdfast/core';
import type { TestContext } from 'vitest';
import type { ConformanceTarget, ResolvedTiming } from './target.js';

/** Per-test helpers: providers that are closed when the test ends, unique keys, timing. */
export class CaseContext {
  private readonly providers: LockProvider[] = [];
  private readonly prefix = `holdfast-conformance/${randomBytes(6).toString('hex')}`;
  private keyCount = 0;

  constructor(
    readonly target: ConformanceTarget,
    readonly capabilities: Capabilities,
    readonly timing: ResolvedTiming,
    test: TestContext,
  ) {
    test.onTestFinished(() => this.closeAll());
  }

  async provider(): Promise<LockProvider> {
    const provider = await this.target.createProvider();
    this.providers.push(provider);
    return provider;
  }

  async providers2(): Promise<[LockProvider, LockProvider]> {
    return [await this.provider(), await this.provider()];
  }

  key(label = 'key'): string {
    return `${this.prefix}/${label}-${++this.keyCount}`;
  }

  private async closeAll(): Promise<void> {
    await Promise.allSettled(this.providers.map((provider) => provider.close()));
  }
}

export function resolveTiming(target: ConformanceTarget, capabilities: Capabilities): ResolvedTiming {
  return {
    shortTtlMs: target.shortTtlMs ?? Math.max(capabilities.minTtlMs, 600),
    promptWakeMs: target.promptWakeMs ?? 1500,
    slackMs: target.slackMs ?? 1000,
    graceMs: capabilities.expiryGraceMs,
  };
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves with the signal's reason once it aborts; rejects if that takes longer than `withinMs`. */
export function abortedWithin(signal: AbortSignal, withinMs: number): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      reject(new Error(`signal did not abort within ${withinMs} ms`));
    }, withinMs);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Skips the running test with a reason that is printed, never silently. */
export function skipBecause(test: TestContext, reason: string): void {
  console.log(`[conformance] skipped "${test.task.name}": ${reason}`);
  test.skip(reason);
}

export async function elapsed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - start };
}

export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject, it resolved');
}
