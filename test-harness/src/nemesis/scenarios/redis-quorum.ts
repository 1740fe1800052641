import type { NemesisControls, NemesisStep, Scenario } from '../types.js';
import { freshHolder } from './common.js';

const TTL = 2000;
const CONTENTION = { workers: 4, keys: 2, ttlMs: TTL, waitMs: 15_000, holdMs: [3000, 6000] as [number, number], writeEveryMs: 200 };

function isolateNode(host: string, atMs: number, forMs: number): NemesisStep[] {
  return [
    {
      atMs,
      run: (controls: NemesisControls) => {
        controls.rig.isolate(host);
        controls.mark(`isolated node ${host} for ${forMs} ms`);
      },
    },
    {
      atMs: atMs + forMs,
      run: (controls: NemesisControls) => {
        controls.rig.heal();
        controls.mark(`healed ${host}`, {});
      },
    },
  ];
}

/** How long the split waits for a hold to begin, so that it falls at the start of a hold. */
const FRESH_HOLD_BOUND_MS = 10_000;

/**
 * A holder left with one node of three (a minority), the other workers with the other two, healed
 * `forMs` after the split. The split waits for a hold to begin (freshHolder): one made at a random
 * moment often fell at the very end of a hold, which then ended before the holder could learn anything.
 */
export function holderWithMinorityNode(atMs: number, forMs: number): NemesisStep[] {
  return [
    {
      atMs,
      run: async (controls: NemesisControls) => {
        const victim = await freshHolder(controls, FRESH_HOLD_BOUND_MS);
        controls.rig.split(['r0', controls.clientHost(victim)]);
        controls.mark(`split: worker ${victim} (a holder) with node r0 | nodes r1, r2 with the rest, for ${forMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, forMs));
        controls.rig.heal();
        controls.mark(`healed worker ${victim}`, { affected: [victim] });
      },
    },
  ];
}

/**
 * No clock scenario: Debian's redis-server allocates with jemalloc (libjemalloc.so.2), whose start-up
 * calls clock_gettime() from inside libfaketime's own initialisation (its dlsym allocates); libfaketime
 * detects the recursion, returns -1, and jemalloc, which does not check, spins. Every libfaketime
 * setting is past that point (wolfcw/libfaketime#130, open upstream), and preloading glibc's malloc
 * ahead of jemalloc crashes redis-server (its jemalloc-only calls then meet glibc's pointers).
 */
export const redisQuorumScenarios: Scenario[] = [
  {
    name: 'node-isolated',
    summary: 'one of the three nodes isolated for 15 s, twice (a different node each time)',
    ...CONTENTION,
    durationMs: 60_000,
    steps: [...isolateNode('r0', 8000, 15_000), ...isolateNode('r1', 32_000, 15_000)],
  },
  {
    name: 'minority-holder',
    summary: 'a holder split off with one node of three for 3 x TTL, twice',
    ...CONTENTION,
    durationMs: 60_000,
    steps: [...holderWithMinorityNode(8000, 3 * TTL), ...holderWithMinorityNode(32_000, 3 * TTL)],
  },
];
