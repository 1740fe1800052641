import { describe, expect, it } from 'vitest';
import { runScenario } from '../src/nemesis/run.js';
import { holderWithMinorityNode } from '../src/nemesis/scenarios/redis-quorum.js';
import { redisQuorumTarget } from '../src/nemesis/targets/redis-quorum.js';

const TTL = 2000;
const TEST_TIMEOUT_MS = 120_000;

describe('a short nemesis on the Redis quorum: a holder left with one node of three', () => {
  it(
    'tells the holder, and never grants its key to the majority side while it still believes',
    async () => {
      const report = await runScenario(
        redisQuorumTarget,
        {
          name: 'minority-holder-short',
          summary: 'a holder split off with one node of three for 3 x TTL, once',
          workers: 3,
          keys: 1,
          ttlMs: TTL,
          waitMs: 15_000,
          holdMs: [3000, 6000],
          writeEveryMs: 200,
          durationMs: 35_000,
          steps: holderWithMinorityNode(6000, 3 * TTL),
        },
        { log: () => undefined },
      );
      expect(report.grants).toBeGreaterThan(3);
      expect(report.doubleGrants).toBe(0);
      expect(report.staleWritesAccepted).toBe(0);
      expect(report.lossesUntold).toBe(0);
      expect(report.hungCalls).toBe(0);
      expect(report.workersCrashed).toEqual([]);
      // The split fell at the start of a hold: the holder could not renew on one node of three and was told.
      expect(report.lossesReported).toBeGreaterThanOrEqual(1);
      // The majority kept going: two nodes of three grant the key once the holder's votes lapsed.
      expect(report.grantsDuringFaults[0], 'grants to the other workers during the split').toBeGreaterThanOrEqual(1);
      expect(report.ok).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );
});
