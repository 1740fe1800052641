import type { NemesisControls, NemesisStep, Scenario } from '../types.js';
import { freshHolder } from './common.js';

const TTL = 2000;
/** One key: every hold lives on the primary the split cuts off. */
const CONTENTION = { workers: 4, keys: 1, ttlMs: TTL, waitMs: 15_000, holdMs: [3000, 6000] as [number, number], writeEveryMs: 200 };
/** Past cluster-node-timeout (2 s), the replica's election and the old lease running out there, with room to be granted. */
const SPLIT_MS = 12_000;
/** How long a split waits for a hold to begin: longer than a hold (3-6 s) and the hand-off after it. */
const FRESH_HOLD_BOUND_MS = 10_000;

/**
 * The primary serving the run's first key split, with a holder, from the rest of the Cluster and the
 * other workers: the majority fails the primary over to its replica; the holder still talks to the
 * old primary, which takes writes until it sees it is in the minority (cluster-node-timeout). One
 * step that heals `forMs` after the split itself. The split waits for a hold to begin (freshHolder), so
 * that it falls mid-hold: a holder in the last moments of its hold releases before the split bites.
 */
export function keyPrimaryIsolatedWithHolder(atMs: number, forMs: number): NemesisStep[] {
  return [
    {
      atMs,
      run: async (controls: NemesisControls) => {
        const primary = await controls.target.serverOf!(controls.keys[0]!);
        const victim = await freshHolder(controls, FRESH_HOLD_BOUND_MS);
        controls.rig.split([primary, controls.clientHost(victim)]);
        controls.mark(`split: ${primary} (the key's primary) with worker ${victim} (a holder) | the rest, for ${forMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, forMs));
        controls.rig.heal();
        controls.mark(`healed ${primary} and worker ${victim}`, { affected: [victim] });
      },
    },
  ];
}

const STEPS = [...keyPrimaryIsolatedWithHolder(8000, SPLIT_MS), ...keyPrimaryIsolatedWithHolder(35_000, SPLIT_MS)];

export const redisClusterScenarios: Scenario[] = [
  {
    name: 'key-primary-isolated',
    summary:
      "the key's primary and a holder split from the rest of the Cluster and the other workers for 12 s, twice (no `replicas` option)",
    ...CONTENTION,
    durationMs: 60_000,
    steps: STEPS,
    doubleGrantsAllowed:
      "without `replicas`, a grant or renewal is acknowledged by the primary alone: the old primary takes the cut-off holder's renewals until cluster-node-timeout tells it it is in the minority, while its replica, promoted, never saw them (Redis replication is asynchronous; docs/semantics-redis.md)",
    tokenRegressionsAllowed:
      'the promoted replica counts tokens from the last increment it received; a grant the old primary made after the split gave the same token',
  },
  {
    name: 'key-primary-isolated-replicas',
    summary: 'the same split, with `replicas: 1` (a grant or renewal counts once WAIT says a replica holds it)',
    ...CONTENTION,
    durationMs: 60_000,
    steps: STEPS,
    providerOptions: { adapter: { replicas: 1 } },
  },
];
