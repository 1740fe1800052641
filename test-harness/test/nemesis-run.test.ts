import { describe, expect, it } from 'vitest';
import { runScenario } from '../src/nemesis/run.js';
import { cutOffHolders } from '../src/nemesis/scenarios/common.js';
import { postgresTarget } from '../src/nemesis/targets/postgres.js';
import type { Scenario } from '../src/nemesis/types.js';

const TTL = 2000;

/** A short nemesis: PostgreSQL leases, a holder cut off from the server for 3 x TTL mid-hold. */
function cutOffScenario(holdMs: [number, number]): Scenario {
  return {
    name: 'holder-cut-off-short',
    summary: 'a holder cut off from PostgreSQL for 3 x TTL, once',
    workers: 3,
    keys: 1,
    ttlMs: TTL,
    waitMs: 15_000,
    holdMs,
    writeEveryMs: 200,
    // The cut starts once a holder holds (up to 10 s after 6 s) and lasts 6 s: 35 s leave the victim,
    // one of three polling contenders for one key, time to be granted again after the heal.
    durationMs: 35_000,
    steps: cutOffHolders([6000], 3 * TTL),
  };
}

const quiet = { log: () => undefined };

describe('a short nemesis on PostgreSQL', () => {
  it('keeps every grant exclusive and every write fenced while a holder is cut off past its lease', async () => {
    const report = await runScenario(postgresTarget, cutOffScenario([3000, 6000]), quiet);
    expect(report.grants).toBeGreaterThan(3);
    expect(report.doubleGrants).toBe(0);
    expect(report.staleWritesAccepted).toBe(0);
    expect(report.tokenRegressions).toBe(0);
    expect(report.lossesUntold).toBe(0);
    expect(report.hungCalls).toBe(0);
    expect(report.workersCrashed).toEqual([]);
    // The cut bit: the holder was told through its signal.
    expect(report.lossesReported).toBeGreaterThanOrEqual(1);
    // One heal recorded. Whether the cut worker is granted again before the end is not asserted: lease
    // mode has no FIFO, and in 2 of 5 runs here (and once in CI) it was not within 23 s of the heal. Its
    // listener heard every release, but NOTIFY reached it a millisecond or two after the other two
    // waiters each time, so their grant statements won every race while they handed the key back and
    // forth (docs/reliability.md). A liveness figure, recorded; every safety count above is asserted.
    expect(report.recoveryMs).toHaveLength(1);
    expect(report.ok).toBe(true);
  });

  it('counts the double grant of a planted holder that ignores its lost signal', async () => {
    // Holds of 10-12 s: the holder cut off at 6 s still has most of its hold to go, far past the lease.
    const report = await runScenario(postgresTarget, cutOffScenario([10_000, 12_000]), { ...quiet, ignoreSignalWorkers: [0, 1, 2] });
    expect(report.doubleGrants).toBeGreaterThanOrEqual(1);
    expect(report.longestOverlapMs).toBeGreaterThan(0);
    // The fence still refuses the ignoring holder's writes once a newer token exists.
    expect(report.staleWritesRejected).toBeGreaterThanOrEqual(1);
    expect(report.staleWritesAccepted).toBe(0);
    expect(report.ok).toBe(false);
  });
});
