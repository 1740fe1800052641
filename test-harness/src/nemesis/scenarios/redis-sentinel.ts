import type { NemesisControls, NemesisStep, Scenario } from '../types.js';
import { freshHolder } from './common.js';

const TTL = 2000;
const CONTENTION = { workers: 4, keys: 2, ttlMs: TTL, waitMs: 15_000, holdMs: [3000, 6000] as [number, number], writeEveryMs: 200 };
/** Past Sentinel's 2 s down-after, its vote and the promotion, with time left for the others to be granted there. */
const SPLIT_MS = 15_000;
/** How long a split waits for a hold to begin: longer than a hold (3-6 s) and the hand-off after it. */
const FRESH_HOLD_BOUND_MS = 10_000;

/**
 * The primary and one holder split from the two replicas (and their Sentinels) and the other workers:
 * the majority's Sentinels promote a replica; the holder still talks to the old primary. One step that
 * heals `forMs` after the split itself: finding the primary (redis-cli in a namespace) took up to 8 s
 * on the loaded machine, and a heal at a fixed time then cut the split short of a failover. The split
 * waits for a hold to begin (freshHolder): a holder split off in the last moments of its hold released
 * before its renewals failed, and with `replicas: 1` nobody was told (lossesReported 0 in one CI run).
 */
export function primaryIsolatedWithHolder(atMs: number, forMs: number): NemesisStep[] {
  return [
    {
      atMs,
      run: async (controls: NemesisControls) => {
        const primary = await controls.target.leader!();
        const victim = await freshHolder(controls, FRESH_HOLD_BOUND_MS);
        controls.rig.split([primary, controls.clientHost(victim)]);
        controls.mark(`split: the primary ${primary} with worker ${victim} (a holder) | the replicas with the rest, for ${forMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, forMs));
        controls.rig.heal();
        controls.mark(`healed ${primary} and worker ${victim}`, { affected: [victim] });
      },
    },
  ];
}

const STEPS = [...primaryIsolatedWithHolder(8000, SPLIT_MS), ...primaryIsolatedWithHolder(35_000, SPLIT_MS)];

export const redisSentinelScenarios: Scenario[] = [
  {
    name: 'primary-isolated',
    summary: 'the primary and a holder split from the replicas and the other workers for 15 s, twice (no `replicas` option)',
    ...CONTENTION,
    durationMs: 60_000,
    steps: STEPS,
    doubleGrantsAllowed:
      'without `replicas`, a grant or renewal is acknowledged by the primary alone: a primary cut off with its holder keeps renewing it while the Sentinels promote a replica that never saw those renewals, and grant the key again there (Redis replication is asynchronous; docs/semantics-redis.md)',
    tokenRegressionsAllowed:
      'the promoted replica counts tokens from the last increment it received; the old primary, cut off, kept counting: both give the same tokens (the fence refuses the stale holder once a higher token wrote)',
  },
  {
    name: 'primary-isolated-replicas',
    summary: 'the same split, with `replicas: 1` (a grant or renewal counts once WAIT says a replica holds it)',
    ...CONTENTION,
    durationMs: 60_000,
    steps: STEPS,
    providerOptions: { adapter: { replicas: 1 } },
  },
];
