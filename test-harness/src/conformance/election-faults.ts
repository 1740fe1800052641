import type { Election } from '@holdfast/core';
import { expect, test } from 'vitest';
import { TermLog } from './election-terms.js';
import { faultSetup } from './faults.js';
import type { CaseFactory } from './suite-types.js';

/** The cut-off leader's calls fail within this, so its renewals give up well inside the lease. */
const CUT_CALL_TIMEOUT_MS = 1000;
const CUT_CLOSE_TIMEOUT_MS = 1000;

/**
 * Case 76 ousts a live leader by a forced release; here its lease lapses instead: the leader is
 * cut off from the server (the proxy stops forwarding), so it cannot renew. That is the common way a leader loses in production
 * (a partition, a paused VM), and the one where only the holder's own deadline can stop its work in time.
 */
export function electionFaultCases(cases: CaseFactory): void {
  test.concurrent('F7. a leader cut off past its lease: its work stops before another term starts, no stale write lands, and it campaigns again once the connection heals', async (t) => {
    const c = cases(t);
    const setup = faultSetup(c, t);
    if (!setup) return;
    const { rig } = setup;
    const slack = c.timing.slackMs;
    const ttlMs = c.timing.shortTtlMs;
    const proxy = await rig.proxy();
    const a = await rig.providerAt(proxy.address, { callTimeoutMs: CUT_CALL_TIMEOUT_MS, closeTimeoutMs: CUT_CLOSE_TIMEOUT_MS });
    const b = await c.provider();
    const key = c.key('cut-leader');
    const log = new TermLog(key, ttlMs);
    const { terms, overlaps, refused } = log;
    const elections: Election[] = [];
    try {
      elections.push(log.candidate(a));
      await c.until('the candidate behind the proxy leads', () => terms.length === 1, CUT_CALL_TIMEOUT_MS + c.timing.callMs);
      elections.push(log.candidate(b));
      proxy.pause();
      const cutAt = performance.now();
      // The lease lapses on the server within TTL; the other candidate's waiting acquire then takes it.
      const bound = ttlMs + c.timing.graceMs + 3 * slack;
      await c.until('the other candidate leads after the cut', () => terms.length === 2, bound);
      const [first, second] = [terms[0]!, terms[1]!];
      expect(first.abortedAt(), 'the cut-off leader was never told').toBeDefined();
      expect(first.abortedAt()! - cutAt, "the cut-off leader's work stopped later than TTL + grace after the cut").toBeLessThan(
        ttlMs + c.timing.graceMs + slack,
      );
      expect(first.abortedAt()!, "the next term started before the cut-off leader's work was told to stop").toBeLessThanOrEqual(
        second.startedAt,
      );
      expect(second.owner, 'the second term belongs to the candidate that was not cut off').toBe(b.owner);
      expect(second.token > first.token, "the new term's token is not above the cut-off one's").toBe(true);

      // The partition heals: what A sent meanwhile arrives late, and must not give it back a lease B holds.
      proxy.resume();
      await c.within('the leading candidate resigns', elections[1]!.resign());
      // The cut-off candidate's calls get through again; its next campaign takes the free key.
      const rejoin = CUT_CALL_TIMEOUT_MS + ttlMs + c.timing.graceMs + c.timing.callMs;
      await c.until('the candidate cut off campaigns again and leads once the connection heals', () => terms.length === 3, rejoin);
      expect(terms[2]!.owner, 'the third term belongs to the healed candidate').toBe(a.owner);
      expect(terms[2]!.token > second.token, "the healed candidate's token is not above the previous term's").toBe(true);
      expect(overlaps, 'terms overlapped').toEqual([]);
      expect(refused, 'the fenced store refused a write: two terms overlapped').toEqual([]);
    } finally {
      await c.within(
        'every candidate resigns',
        Promise.all(elections.map((election) => election.resign())),
        CUT_CLOSE_TIMEOUT_MS + c.timing.callMs,
      );
    }
  });
}
