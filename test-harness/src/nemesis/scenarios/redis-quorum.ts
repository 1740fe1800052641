import type { NemesisControls, NemesisStep, Scenario } from '../types.js';

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

/** A holder left with one node of three (a minority), the other workers with the other two. */
function minorityHolder(atMs: number, forMs: number): NemesisStep[] {
  let victim = 0;
  return [
    {
      atMs,
      run: (controls: NemesisControls) => {
        const holders = controls.holders();
        victim = holders.length > 0 ? holders[0]! : 0;
        controls.rig.split(['r0', controls.clientHost(victim)]);
        controls.mark(`split: worker ${victim} (a holder) with node r0 | nodes r1, r2 with the rest, for ${forMs} ms`);
      },
    },
    {
      atMs: atMs + forMs,
      run: (controls: NemesisControls) => {
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
    steps: [...minorityHolder(8000, 3 * TTL), ...minorityHolder(32_000, 3 * TTL)],
  },
];
