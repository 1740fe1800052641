import { describe, expect, it } from 'vitest';
import { runScenario } from '../src/nemesis/run.js';
import { clockJumps, cutOffHolders } from '../src/nemesis/scenarios/common.js';
import { mariadbTarget } from '../src/nemesis/targets/mariadb.js';
import type { Scenario } from '../src/nemesis/types.js';

const TTL = 2000;
/** As long as PostgreSQL's short run: a cut at 6 s, healed by 12-16 s, then 20 s of contention to watch. */
const DURATION_MS = 35_000;
const SHORT = {
  workers: 3,
  keys: 1,
  ttlMs: TTL,
  waitMs: 15_000,
  holdMs: [3000, 6000] as [number, number],
  writeEveryMs: 200,
  durationMs: DURATION_MS,
};
const quiet = { log: () => undefined };

describe('a short nemesis on MariaDB', () => {
  it('keeps every grant exclusive and every write fenced while a holder is cut off past its lease', async () => {
    const scenario: Scenario = {
      name: 'holder-cut-off-short',
      summary: 'a holder cut off for 3 x TTL, once',
      ...SHORT,
      steps: cutOffHolders([6000], 3 * TTL),
    };
    const report = await runScenario(mariadbTarget, scenario, quiet);
    expect(report.grants).toBeGreaterThanOrEqual(3);
    expect(report.doubleGrants).toBe(0);
    expect(report.staleWritesAccepted).toBe(0);
    expect(report.tokenRegressions).toBe(0);
    expect(report.lossesUntold).toBe(0);
    expect(report.hungCalls).toBe(0);
    expect(report.workersCrashed).toEqual([]);
    // The cut bit: the holder was told through its signal.
    expect(report.lossesReported).toBeGreaterThanOrEqual(1);
    // One heal recorded. Whether the cut worker is granted again before the end is not asserted: in 2 of
    // 3 short runs it was not (polling waiters, no FIFO, two others contending), while every safety
    // count above held; the full run measured 0.4-5.1 s (docs/reliability.md).
    expect(report.recoveryMs).toHaveLength(1);
    expect(report.ok).toBe(true);
  });

  it('fences every write when the server clock jumps forward past the lease and back', async () => {
    const scenario: Scenario = {
      name: 'server-clock-jumps-short',
      summary: 'the server clock forward 3 x TTL, then back to real',
      ...SHORT,
      clockHosts: ['db'],
      // The forward jump waits up to 8 s for a hold to begin (clockJumps); the jump back comes after.
      steps: clockJumps('db', [
        { atMs: 6000, jumpMs: 3 * TTL },
        { atMs: 20_000, jumpMs: -3 * TTL, heal: true },
      ]),
      doubleGrantsAllowed: 'leases are judged on the server clock',
    };
    const report = await runScenario(mariadbTarget, scenario, quiet);
    expect(report.grants).toBeGreaterThanOrEqual(3);
    // A forward jump past the TTL ends the lease at once; the holder learns it at its next renewal
    // (about TTL / 3 later), so an overlap is allowed but bounded by that, and the fence refuses its writes.
    expect(report.longestOverlapMs).toBeLessThan(TTL);
    expect(report.lossesReported).toBeGreaterThanOrEqual(1);
    expect(report.staleWritesAccepted).toBe(0);
    expect(report.tokenRegressions).toBe(0);
    expect(report.hungCalls).toBe(0);
    expect(report.workersCrashed).toEqual([]);
    expect(report.ok).toBe(true);
  });
});
