import { describe, expect, it } from 'vitest';
import { runScenario } from '../src/nemesis/run.js';
import { minorityHolder } from '../src/nemesis/scenarios/cluster.js';
import { consulTarget } from '../src/nemesis/targets/consul.js';

/** Consul's smallest session TTL: the holder learns a loss within it, the cluster frees its key after 2 x TTL. */
const TTL = 10_000;
/** Past 2 x TTL and the 2 s lock-delay, so that the majority can take the key before the heal. */
const SPLIT_MS = 28_000;
/** Three servers to start and elect, then the 45 s run, on a loaded machine. */
const TEST_TIMEOUT_MS = 180_000;

describe('a short nemesis on Consul: a holder split off with its agent, a minority of one server', () => {
  it(
    'tells the holder before the majority grants its key, though its agent is marked failed within seconds',
    async () => {
      const report = await runScenario(
        // A 2 s lock-delay: the shortest the holder's session bound follows, and short enough that a
        // session ended 7 s into the split frees the key before a 10 s TTL would tell the holder.
        () => consulTarget('2s'),
        {
          name: 'minority-holder-short',
          summary: 'a holder split off with its server for 28 s, once',
          workers: 3,
          keys: 1,
          ttlMs: TTL,
          waitMs: 60_000,
          // Longer than the holder's loss detection (its session TTL), so that the split bites mid-hold.
          holdMs: [15_000, 25_000],
          writeEveryMs: 500,
          durationMs: 45_000,
          // Whoever holds 2 s in: its 15-25 s hold outlasts its loss detection (the TTL) after the split.
          steps: minorityHolder(2000, SPLIT_MS, 0),
        },
        { log: () => undefined },
      );
      // The double grant this catches: a session with Consul's default node check (serfHealth) is
      // invalidated as soon as the majority marks the minority's node failed, seconds into the split,
      // while its holder counts on the TTL. Sessions without node checks end only at their TTL.
      expect(report.doubleGrants).toBe(0);
      expect(report.staleWritesAccepted).toBe(0);
      expect(report.tokenRegressions).toBe(0);
      expect(report.lossesUntold).toBe(0);
      expect(report.hungCalls).toBe(0);
      expect(report.workersCrashed).toEqual([]);
      expect(report.lossesReported).toBeGreaterThanOrEqual(1);
      // The majority took the key once the holder's session lapsed (2 x TTL, then the lock-delay).
      expect(report.grantsDuringFaults[0], 'grants to the other workers during the split').toBeGreaterThanOrEqual(1);
      expect(report.ok).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );
});
