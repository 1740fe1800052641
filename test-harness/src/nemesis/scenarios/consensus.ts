import type { Scenario } from '../types.js';
import { cutOffFreshHolder, isolateLeader, rollingRestart, settle, splitWithFreshHolder } from './cluster.js';

/**
 * A 4 s lease (an etcd lease of 4 s; a ZooKeeper session of 4 s, the target's URL): short enough for
 * several losses and recoveries a minute, long enough for a loaded 2-core machine's elections (1 s
 * election timeout on etcd, 2 s sync limit on ZooKeeper).
 */
const TTL = 4000;
const WORKERS = 6;
const CONTENTION = { workers: WORKERS, keys: 2, ttlMs: TTL, waitMs: 30_000, holdMs: [1500, 5000] as [number, number], writeEveryMs: 250 };

/** The scenarios of a 3-member etcd cluster or ZooKeeper ensemble (the same faults as Consul's, sized to the lease). */
export function consensusScenarios(engine: string): Scenario[] {
  return [
    {
      name: 'leader-isolated',
      summary: `the ${engine} leader isolated for 15 s, twice (whoever leads then, the second time)`,
      ...CONTENTION,
      durationMs: 65_000,
      steps: [...isolateLeader(10_000, 15_000), ...isolateLeader(40_000, 15_000)],
    },
    {
      name: 'majority-minority',
      summary:
        'a worker just granted, its member and the other worker of that member split from the other 2 members and 4 workers for 20 s',
      ...CONTENTION,
      holdMs: [6000, 10_000],
      durationMs: 55_000,
      steps: splitWithFreshHolder(WORKERS, 10_000, 20_000),
    },
    {
      name: 'client-cut-off',
      summary: 'a worker just granted cut off from every member for 2.5 x TTL (past its lease/session), twice',
      ...CONTENTION,
      // Holds longer than the cut-off's loss detection (under a TTL), so each cut bites mid-hold.
      holdMs: [6000, 10_000],
      durationMs: 60_000,
      steps: [...cutOffFreshHolder(10_000, 2.5 * TTL), ...cutOffFreshHolder(35_000, 2.5 * TTL)],
    },
    {
      name: 'rolling-restart',
      summary: 'every member stopped and started again in turn, 5 s apart, under held and awaited locks',
      ...CONTENTION,
      // The restarts take 20-30 s each on a loaded machine (a JVM start, an election): the run goes on
      // 20 s after the last one, whatever the duration.
      durationMs: 60_000,
      steps: [...rollingRestart(10_000, 5000), settle(20_000)],
    },
  ];
}
