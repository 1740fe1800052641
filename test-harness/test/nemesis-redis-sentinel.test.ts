import { describe, expect, it } from 'vitest';
import { runScenario } from '../src/nemesis/run.js';
import { primaryIsolatedWithHolder } from '../src/nemesis/scenarios/redis-sentinel.js';
import { redisSentinelTarget } from '../src/nemesis/targets/redis-sentinel.js';
import type { Scenario } from '../src/nemesis/types.js';

const TTL = 2000;
/** Sentinel's 2 s down-after, its vote, the promotion and the old lease running out there, with room to be granted. */
const SPLIT_MS = 12_000;
/** Three Redis nodes and three Sentinels to start and agree, then the 35 s run, on a loaded machine. */
const TEST_TIMEOUT_MS = 180_000;

function split(providerOptions?: Record<string, unknown>): Scenario {
  return {
    name: 'primary-isolated-short',
    summary: 'the primary and a holder split from the replicas and the other workers, once',
    workers: 3,
    keys: 1,
    ttlMs: TTL,
    waitMs: 15_000,
    holdMs: [3000, 6000],
    writeEveryMs: 200,
    // The split begins at 6 s plus the time to find the primary (seconds when loaded) and lasts 12 s.
    durationMs: 35_000,
    steps: primaryIsolatedWithHolder(6000, SPLIT_MS),
    doubleGrantsAllowed: 'measured, not excluded: Redis replication is asynchronous',
    tokenRegressionsAllowed: 'measured, not excluded: the promoted replica counts from where it stood',
    ...(providerOptions ? { providerOptions } : {}),
  };
}
const quiet = { log: () => undefined };

describe('a short nemesis on Redis Sentinel: the primary cut off with a holder, a replica promoted', () => {
  it(
    'without `replicas`, grants the lock again on the promoted replica while the old primary keeps its holder (the documented window)',
    async () => {
      const report = await runScenario(redisSentinelTarget, split(), quiet);
      // The old primary keeps renewing (and granting) for the holder cut off with it, the promoted
      // replica grants the same key to the others: two holders, each told nothing until the heal.
      expect(report.doubleGrants).toBeGreaterThanOrEqual(1);
      expect(report.longestOverlapMs).toBeGreaterThan(0);
      // The fence is what still holds: it refuses the writes of whichever grant has the lower token.
      expect(report.staleWritesAccepted).toBe(0);
      expect(report.staleWritesRejected).toBeGreaterThanOrEqual(1);
      expect(report.hungCalls).toBe(0);
      expect(report.workersCrashed).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'with `replicas: 1`, the cut-off holder is told and no one is granted the lock twice',
    async () => {
      const report = await runScenario(redisSentinelTarget, split({ adapter: { replicas: 1 } }), quiet);
      expect(report.grants).toBeGreaterThan(3);
      expect(report.doubleGrants).toBe(0);
      expect(report.tokenRegressions).toBe(0);
      expect(report.staleWritesAccepted).toBe(0);
      expect(report.lossesUntold).toBe(0);
      // The cut bit: the old primary could not reach a replica, so the holder's renewal failed and it was told.
      expect(report.lossesReported).toBeGreaterThanOrEqual(1);
      expect(report.hungCalls).toBe(0);
      expect(report.workersCrashed).toEqual([]);
      expect(report.ok).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );
});
