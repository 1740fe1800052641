import { describe, expect, it } from 'vitest';
import { runScenario } from '../src/nemesis/run.js';
import { cutOffHolders } from '../src/nemesis/scenarios/common.js';
import { ferretdbTarget } from '../src/nemesis/targets/ferretdb.js';

const TTL = 2000;
/**
 * Longer than PostgreSQL's 35 s: the MongoDB adapter's waiters poll FerretDB (no change streams there), and
 * after a heal the cut worker waited up to 18 s for its next grant in the full run (no FIFO).
 */
const DURATION_MS = 40_000;

describe('a short nemesis on MongoDB (FerretDB)', () => {
  it('keeps every grant exclusive and every write fenced while a holder is cut off past its lease', async () => {
    const report = await runScenario(
      ferretdbTarget,
      {
        name: 'holder-cut-off-short',
        summary: 'a holder cut off for 3 x TTL, once',
        workers: 3,
        keys: 1,
        ttlMs: TTL,
        waitMs: 15_000,
        holdMs: [3000, 6000],
        writeEveryMs: 200,
        durationMs: DURATION_MS,
        steps: cutOffHolders([6000], 3 * TTL),
      },
      { log: () => undefined },
    );
    expect(report.grants).toBeGreaterThanOrEqual(3);
    expect(report.doubleGrants).toBe(0);
    expect(report.staleWritesAccepted).toBe(0);
    expect(report.tokenRegressions).toBe(0);
    expect(report.lossesUntold).toBe(0);
    expect(report.hungCalls).toBe(0);
    expect(report.workersCrashed).toEqual([]);
    expect(report.lossesReported).toBeGreaterThanOrEqual(1);
    // One heal recorded. Whether the cut worker is granted again before the end is not asserted: twice
    // it was not within 28 s of the heal (the full run measured 0.2-18 s), a liveness figure not analysed
    // yet (docs/reliability.md), while every safety count above held.
    expect(report.recoveryMs).toHaveLength(1);
    expect(report.ok).toBe(true);
  });
});
