import type { Scenario } from '../types.js';
import { clockJumps, cutOffHolders } from './common.js';

const TTL = 2000;
const CONTENTION = { workers: 4, keys: 2, ttlMs: TTL, waitMs: 15_000, holdMs: [3000, 6000] as [number, number], writeEveryMs: 200 };

/** A holder cut off from its one server past its lease, three times. */
export const holderCutOff: Scenario = {
  name: 'holder-cut-off',
  summary: 'a holder cut off from the server for 3 x TTL, three times',
  ...CONTENTION,
  durationMs: 60_000,
  steps: cutOffHolders([8000, 26_000, 44_000], 3 * TTL),
};

/** The one server's clock jumping forward and back, each time past the TTL. */
export const serverClockJumps: Scenario = {
  name: 'server-clock-jumps',
  summary: 'the server clock forward 3 x TTL, back to real, back 3 x TTL, back to real',
  ...CONTENTION,
  durationMs: 60_000,
  clockHosts: ['db'],
  steps: clockJumps('db', [
    { atMs: 10_000, jumpMs: 3 * TTL },
    { atMs: 22_000, jumpMs: -3 * TTL, heal: true },
    { atMs: 34_000, jumpMs: -3 * TTL },
    { atMs: 46_000, jumpMs: 3 * TTL, heal: true },
  ]),
  doubleGrantsAllowed:
    'leases are judged on the server clock: a forward jump past the TTL ends every lease at once, while each holder learns it only at its next renewal',
};

/**
 * PostgreSQL's and MariaDB's leases: rows in a table that expire on the server's clock (now() /
 * UTC_TIMESTAMP(3)), so both face the same faults.
 */
export const serverClockLeaseScenarios: Scenario[] = [holderCutOff, serverClockJumps];
