import { ErrorCode, type LockProvider, runExclusive } from '@holdfast/core';
import { expect, test } from 'vitest';
import { abortTime } from '../helpers/index.js';
import type { CaseFactory } from './suite-types.js';
import type { CaseContext } from './support.js';

/** Locks move (handOff) where a lease keeps them: there runExclusive leaves at once, elsewhere it holds until atLeastFor. */
function movable(provider: LockProvider): boolean {
  return provider.capabilities.renewal === 'per-lock' && provider.capabilities.noHandOff === undefined;
}

/** When the key can be taken again (performance.now()), polled by `other`. */
async function freedAt(c: CaseContext, other: LockProvider, key: string, withinMs: number): Promise<number> {
  await c.until(
    'the key is free again',
    async () => {
      const lock = await other.tryAcquire(key);
      if (lock) await lock.release();
      return lock !== null;
    },
    withinMs,
    20,
  );
  return performance.now();
}

export function scheduledCases(cases: CaseFactory): void {
  test('92. runExclusive: one instance runs the job, another is skipped; a job that ends early leaves the key held until atLeastFor from the grant (without holding the process where the lock can move), then free', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key('scheduled');
    const atLeastMs = Math.max(c.timing.shortTtlMs, 1000);
    const atMostMs = 4 * atLeastMs;
    let skipped: unknown;
    const started = performance.now();
    const outcome = await c.within(
      'runExclusive answers',
      runExclusive(
        a,
        key,
        async () => {
          // Another instance's run of the same job while this one runs: skipped, its job never called.
          skipped = await runExclusive(b, key, () => 'ran twice', { atMostFor: atMostMs });
          return 'ran';
        },
        { atMostFor: atMostMs, atLeastFor: atLeastMs },
      ),
      atLeastMs + c.timing.callMs,
    );
    const returnedMs = performance.now() - started;
    expect(outcome, 'the job did not run on a free key').toMatchObject({ ran: true, value: 'ran' });
    expect(skipped, 'a second instance ran the job while the first ran it').toEqual({ ran: false });
    if (movable(a)) {
      expect(returnedMs, 'runExclusive held the caller until atLeastFor although the lock can stay on its lease').toBeLessThan(atLeastMs);
      expect(
        a.held().map((info) => info.key),
        'the handed-off lock is still among the provider’s own',
      ).not.toContain(key);
      expect(await c.within('tryAcquire answers', b.tryAcquire(key)), 'the key was free before atLeastFor').toBeNull();
    } else {
      // A session or ping keeps the lock: runExclusive holds it, and the caller, until the at-least point.
      expect(returnedMs, 'runExclusive let go before atLeastFor on a backend that keeps locks by session').toBeGreaterThanOrEqual(
        atLeastMs - 5,
      );
    }
    const freed = await freedAt(c, b, key, atLeastMs + c.timing.graceMs + c.timing.callMs);
    expect(freed - started, 'the key was free before atLeastFor from the grant').toBeGreaterThanOrEqual(atLeastMs - 5);
    expect(freed - started, 'the key stayed held well past atLeastFor').toBeLessThan(atLeastMs + c.timing.graceMs + c.timing.slackMs);
  });

  test('93. runExclusive: a job that hangs past atMostFor has its signal aborted before the lease ends, and another instance takes the key by atMostFor (plus grace) although the job has not returned', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key('hung-job');
    const atMostMs = Math.max(c.timing.shortTtlMs, 1000);
    let finish!: () => void;
    const hanging = new Promise<void>((resolve) => {
      finish = resolve;
    });
    let abortedAt: (() => number | undefined) | undefined;
    let jobStarted = false;
    let reason: unknown;
    const started = performance.now();
    const run = runExclusive(
      a,
      key,
      async (signal) => {
        abortedAt = abortTime(signal);
        jobStarted = true;
        signal.addEventListener('abort', () => {
          reason = signal.reason;
        });
        await hanging;
      },
      { atMostFor: atMostMs },
    );
    try {
      await c.until('the job runs', () => jobStarted, c.timing.callMs);
      const freed = await freedAt(c, b, key, atMostMs + c.timing.graceMs + c.timing.callMs);
      const stoppedAt = abortedAt?.();
      expect(stoppedAt, "the hung job's signal never aborted").toBeDefined();
      expect(stoppedAt! - started, "the hung job's signal aborted after its lease ran out").toBeLessThanOrEqual(atMostMs);
      expect((reason as { code?: string }).code, 'the hung job was not told it lost the lock').toBe(ErrorCode.Lost);
      expect(freed - started, 'the key was free before atMostFor ran out').toBeGreaterThanOrEqual(atMostMs * 0.9 - 5);
      expect(freed - started, 'the key stayed held past atMostFor: the lease was renewed').toBeLessThan(
        atMostMs + c.timing.graceMs + c.timing.slackMs,
      );
    } finally {
      finish();
      await c.within('runExclusive of the hung job ends', run);
    }
  });
}
