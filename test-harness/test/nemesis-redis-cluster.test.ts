import { describe, expect, it } from 'vitest';
import { runScenario } from '../src/nemesis/run.js';
import { keyPrimaryIsolatedWithHolder } from '../src/nemesis/scenarios/redis-cluster.js';
import { redisClusterTarget } from '../src/nemesis/targets/redis-cluster.js';
import type { Scenario } from '../src/nemesis/types.js';

const TTL = 2000;
/** cluster-node-timeout (2 s), the replica's election and promotion, the old lease running out there, and room to be granted. */
const SPLIT_MS = 12_000;
/** Six nodes to start and join into a Cluster, then the 35 s run, on a loaded machine. */
const TEST_TIMEOUT_MS = 180_000;

function split(providerOptions?: Record<string, unknown>): Scenario {
  return {
    name: 'key-primary-isolated-short',
    summary: "the key's primary and a holder split from the rest of the Cluster and the other workers, once",
    workers: 3,
    keys: 1,
    ttlMs: TTL,
    waitMs: 15_000,
    holdMs: [3000, 6000],
    writeEveryMs: 200,
    durationMs: 35_000,
    steps: keyPrimaryIsolatedWithHolder(6000, SPLIT_MS),
    doubleGrantsAllowed: 'measured, not excluded: Redis replication is asynchronous',
    tokenRegressionsAllowed: 'measured, not excluded: the promoted replica counts from where it stood',
    ...(providerOptions ? { providerOptions } : {}),
  };
}
const quiet = { log: () => undefined };

describe("a short nemesis on Redis Cluster: the key's primary cut off with a holder, its replica promoted", () => {
  it(
    'without `replicas`, the fence refuses every stale write whatever the failover lost, and no call hangs',
    async () => {
      const report = await runScenario(redisClusterTarget, split(), quiet);
      expect(report.grants).toBeGreaterThan(3);
      // Double grants and repeated tokens are the documented window here (measured, in the report);
      // what must hold anyway is the fence.
      expect(report.staleWritesAccepted).toBe(0);
      expect(report.hungCalls).toBe(0);
      expect(report.workersCrashed).toEqual([]);
      // The split bit: the cut-off holder was told (its renewals refused once its primary saw the minority).
      expect(report.lossesReported).toBeGreaterThanOrEqual(1);
      expect(report.recoveryMs).toHaveLength(1);
      // The failover served the majority side while the split lasted (the clients found the promoted replica).
      expect(report.grantsDuringFaults[0], 'grants to the other workers during the split').toBeGreaterThanOrEqual(1);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'with `replicas: 1`, the cut-off holder is told and no one is granted the lock twice',
    async () => {
      const report = await runScenario(redisClusterTarget, split({ adapter: { replicas: 1 } }), quiet);
      expect(report.grants).toBeGreaterThan(3);
      expect(report.doubleGrants).toBe(0);
      expect(report.tokenRegressions).toBe(0);
      expect(report.staleWritesAccepted).toBe(0);
      expect(report.lossesUntold).toBe(0);
      // The cut bit: the old primary could not reach its replica, so the holder's renewal failed and it was told.
      expect(report.lossesReported).toBeGreaterThanOrEqual(1);
      // Not asserted: grants during the split. The promoted replica has no replica of its own while the
      // split lasts (its old primary is cut off), so WAIT 1 cannot succeed there: acquire fails with a
      // BackendError until the heal, the price of the option (docs/semantics-redis.md).
      expect(report.hungCalls).toBe(0);
      expect(report.workersCrashed).toEqual([]);
      expect(report.ok).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );
});
