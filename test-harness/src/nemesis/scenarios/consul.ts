import type { Scenario } from '../types.js';
import { isolateLeader, splitOff } from './cluster.js';
import { cutOffHolders } from './common.js';

/** Consul's smallest session TTL; a lapsed session is freed within 2 x TTL, then the lock delay. */
const TTL = 10_000;
const WORKERS = 6;
const CONTENTION = { workers: WORKERS, keys: 2, ttlMs: TTL, waitMs: 60_000, holdMs: [4000, 12_000] as [number, number], writeEveryMs: 500 };

export const consulScenarios: Scenario[] = [
  {
    name: 'leader-isolated',
    summary: 'the Raft leader isolated for 20 s, twice',
    ...CONTENTION,
    durationMs: 100_000,
    steps: [...isolateLeader(15_000, 20_000), ...isolateLeader(60_000, 20_000)],
  },
  {
    name: 'majority-minority',
    summary: 'one server and its 2 workers split from the other 2 servers and 4 workers for 30 s',
    ...CONTENTION,
    durationMs: 80_000,
    steps: splitOff(0, WORKERS, 15_000, 30_000),
  },
  {
    name: 'client-cut-off',
    summary: 'a holder cut off from every server for 2.5 x TTL (past its session), twice',
    ...CONTENTION,
    // Holds longer than loss detection (a session TTL plus the watch's retries), so the cut bites mid-hold.
    holdMs: [15_000, 25_000],
    durationMs: 90_000,
    steps: cutOffHolders([10_000, 50_000], 25_000),
  },
];
