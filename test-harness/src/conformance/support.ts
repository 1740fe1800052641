import { randomBytes } from 'node:crypto';
import type { Capabilities, Lock, LockProvider } from '@holdfast/core';
import { expect, type TestContext } from 'vitest';
import { elapsed, until, within } from '../helpers/index.js';
import { LeakBaseline } from './leak-baseline.js';
import type { ConformanceTarget, ResolvedTiming } from './target.js';

/** Per-test helpers: providers that are closed when the test ends, unique keys, timing, bounded awaits. */
export class CaseContext {
  private readonly providers: LockProvider[] = [];
  private readonly prefix = `holdfast-conformance/${randomBytes(6).toString('hex')}`;
  private keyCount = 0;

  constructor(
    readonly target: ConformanceTarget,
    readonly capabilities: Capabilities,
    readonly timing: ResolvedTiming,
    test: TestContext,
    /** Timers before the suite's first provider existed (case 30). */
    readonly leaks: LeakBaseline = new LeakBaseline(),
  ) {
    test.onTestFinished(() => this.closeAll());
  }

  async provider(): Promise<LockProvider> {
    const provider = await this.within('createProvider() answers', Promise.resolve(this.target.createProvider()));
    this.providers.push(provider);
    return provider;
  }

  async providers2(): Promise<[LockProvider, LockProvider]> {
    return [await this.provider(), await this.provider()];
  }

  /** Two providers and a fresh key that the first holds for a minute: longer than any case, so only the case lets it go. */
  async heldKey(): Promise<{ a: LockProvider; b: LockProvider; key: string; holder: Lock }> {
    const [a, b] = await this.providers2();
    const key = this.key();
    const holder = await this.within('tryAcquire answers', a.tryAcquire(key, { ttlMs: 60_000 }));
    expect(holder, 'a free key was refused').not.toBeNull();
    return { a, b, key, holder: holder! };
  }

  /**
   * Two providers and a fresh key that the first holds for `ttlMs` (default: the short TTL) without
   * renewal: a lease left to run out. `sentAt` (performance.now()) is when it was asked for, the moment
   * the lease is timed from.
   */
  async unrenewedLock(
    ttlMs = this.timing.shortTtlMs,
  ): Promise<{ a: LockProvider; b: LockProvider; key: string; ttlMs: number; lock: Lock; sentAt: number }> {
    const [a, b] = await this.providers2();
    const key = this.key();
    const sentAt = performance.now();
    const lock = await this.within('tryAcquire answers', a.tryAcquire(key, { ttlMs, autoRenew: false }));
    expect(lock, 'a free key was refused').not.toBeNull();
    return { a, b, key, ttlMs, lock: lock!, sentAt };
  }

  key(label = 'key'): string {
    return `${this.prefix}/${label}-${++this.keyCount}`;
  }

  /**
   * Awaits `work`, failing with a message that names the behaviour when it takes longer than `ms`
   * (default: one backend call's bound), so a hanging implementation fails this case quickly.
   */
  within<T>(what: string, work: Promise<T>, ms = this.timing.callMs): Promise<T> {
    return within(work, ms, what);
  }

  /** Resolves once `check()` is true; fails naming the behaviour if it is still false after `ms` (each check bounded by one call's bound). */
  until(what: string, check: () => Promise<boolean> | boolean, ms: number, everyMs = 10): Promise<number> {
    return until(check, ms, what, { everyMs, checkMs: this.timing.callMs });
  }

  /**
   * The backend's round trip, the median of a few inspect() calls: the unit for "answers at once"
   * bounds, which must be tight enough that an implementation that waits a poll interval fails.
   */
  async roundTripMs(provider: LockProvider, key: string): Promise<number> {
    const samples: number[] = [];
    for (let i = 0; i < 5; i++) {
      samples.push((await elapsed(() => this.within('inspect() answers', provider.inspect(key)))).ms);
    }
    return median(samples);
  }

  /**
   * Single attempts at something taken (`what`: "a busy key", "a full semaphore") each answer null,
   * and in a few round trips (median): tryAcquire never waits.
   */
  async expectTriesAnswerAtOnce(what: string, attempts: readonly (() => Promise<Lock | null>)[], roundTripMs: number): Promise<void> {
    const times: number[] = [];
    for (const attempt of attempts) {
      const tried = await this.within(`tryAcquire of ${what} answers`, elapsed(attempt));
      expect(tried.value, `${what} was granted`).toBeNull();
      times.push(tried.ms);
    }
    expect(
      median(times),
      `tryAcquire of ${what} waited (round trip ${roundTripMs.toFixed(1)} ms, times ${times.map(Math.round).join(',')})`,
    ).toBeLessThan(this.promptBoundMs(roundTripMs));
  }

  /** Bound for a call that must answer in a few round trips ("never waits"). */
  promptBoundMs(roundTripMs: number): number {
    return 4 * roundTripMs + PROMPT_MARGIN_MS;
  }

  private async closeAll(): Promise<void> {
    await Promise.allSettled(this.providers.map((provider) => provider.close()));
  }
}

/** Scheduling noise allowed on top of a few round trips; far below any poll interval worth the name. */
const PROMPT_MARGIN_MS = 60;

export function resolveTiming(target: ConformanceTarget, capabilities: Capabilities): ResolvedTiming {
  const slackMs = target.slackMs ?? 1000;
  const promptWakeMs = target.promptWakeMs ?? 1500;
  return {
    shortTtlMs: target.shortTtlMs ?? Math.max(capabilities.minTtlMs, 600),
    promptWakeMs,
    slackMs,
    graceMs: capabilities.expiryGraceMs,
    callMs: 2 * slackMs + promptWakeMs,
    unreachableMs: target.unreachableFailsWithinMs ?? slackMs + 500,
  };
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** Skips the running test with a reason that is printed, never silently. */
export function skipBecause(test: TestContext, reason: string): void {
  console.log(`[conformance] skipped "${test.task.name}": ${reason}`);
  test.skip(reason);
}
