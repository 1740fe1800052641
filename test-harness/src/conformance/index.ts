import type { Capabilities } from '@holdfast/core';
import { afterAll, beforeAll, describe } from 'vitest';
import { abandonedGrantCases } from './abandoned-grant.js';
import { crashCases } from './crash.js';
import { electionCases } from './election.js';
import { electionFaultCases } from './election-faults.js';
import { electionLossCases, observeRenewalCases } from './election-loss.js';
import { exclusionCases } from './exclusion.js';
import { expiryCases } from './expiry.js';
import { faultCases } from './faults.js';
import { fencingCases } from './fencing.js';
import { handOffCases } from './hand-off.js';
import { inspectionCases } from './inspection.js';
import { LeakBaseline } from './leak-baseline.js';
import { lifecycleCases } from './lifecycle.js';
import { listingCases } from './listing.js';
import { heldLossCases, listingExactCases } from './listing-exact.js';
import { longHoldCases } from './long-hold.js';
import { multiKeyCases } from './multi-key.js';
import { ownHolderCases } from './own-holders.js';
import { ownershipCases } from './ownership.js';
import { readWriteCases } from './read-write.js';
import { readWriteOtherUseCases } from './read-write-other-uses.js';
import { scheduledCases } from './scheduled.js';
import { semaphoreLapseCases, semaphoreLimitCases } from './semaphore-limits.js';
import { semaphoreRenewalCases, semaphoreSlotCases } from './semaphore-slots.js';
import { semaphoreCases } from './semaphores.js';
import type { CaseFactory, SuiteOptions } from './suite-types.js';
import { CaseContext, resolveTiming } from './support.js';
import type { ConformanceTarget } from './target.js';
import { waitingCases } from './waiting.js';
import { webLockCases } from './web-locks.js';

export { FencedResource } from './fencing.js';
export type { SuiteOptions } from './suite-types.js';
export type { ConformanceTarget } from './target.js';

/** Ceiling for a single case; each await in a case has its own, much tighter, bound. */
const CASE_TIMEOUT_MS = 120_000;

/**
 * Registers the Holdfast conformance suite for one adapter as vitest suites. Call it at the top
 * level of a test file. Capabilities are read from a first provider instance and select the
 * optional cases; skipped cases print why. The numbered behaviours are listed in docs/conformance.md.
 */
export function defineConformanceSuite(target: ConformanceTarget, options: SuiteOptions = {}): void {
  describe(`conformance: ${target.name}`, { timeout: CASE_TIMEOUT_MS }, () => {
    let capabilities: Capabilities | undefined;
    const leaks = new LeakBaseline();
    beforeAll(async () => {
      // Before the first provider exists: whatever it starts and never stops is a leak (case 30).
      leaks.start();
      const probe = await target.createProvider();
      capabilities = probe.capabilities;
      await probe.close();
    }, CASE_TIMEOUT_MS);
    afterAll(() => leaks.stop());
    const cases: CaseFactory = (test) => {
      if (options.only && !options.only.some((prefix) => test.task.name.startsWith(prefix))) test.skip('not selected');
      if (!capabilities) throw new Error('capabilities were not read: createProvider() failed in beforeAll');
      return new CaseContext(target, capabilities, resolveTiming(target, capabilities), test, leaks);
    };
    describe('exclusion', () => exclusionCases(cases));
    describe('waiting', () => waitingCases(cases));
    describe('ownership', () => {
      ownershipCases(cases);
      ownHolderCases(cases);
    });
    describe('hand-off', () => handOffCases(cases));
    describe('fencing', () => fencingCases(cases));
    describe('inspection', () => inspectionCases(cases));
    describe('listing', () => {
      listingCases(cases);
      listingExactCases(cases);
    });
    describe('leader election', () => {
      electionCases(cases);
      electionLossCases(cases);
    });
    describe('semaphores', () => {
      semaphoreCases(cases);
      semaphoreLimitCases(cases);
      semaphoreSlotCases(cases);
      // Side by side with each other, not with the expiry cases: slot writes are the heaviest a backend
      // serves (a new version record per change on FerretDB), and beside the long hold they starve renewals.
      semaphoreLapseCases(cases);
      semaphoreRenewalCases(cases);
    });
    describe('multi-key locks', () => multiKeyCases(cases));
    describe('read-write locks', () => {
      readWriteCases(cases);
      readWriteOtherUseCases(cases);
    });
    describe('Web Locks layer', () => webLockCases(cases));
    // The cases that mostly wait (for leases to run out, renewals, atLeastFor and atMostFor, killed
    // processes, stalls and cuts) run side by side across these four groups: their waits overlap
    // instead of adding up, within vitest's limit of cases in flight. Before the lifecycle group,
    // whose case 30 counts what every case before it left behind.
    describe.concurrent('expiry and renewal', () => {
      // The long hold first: it is the longest, and the others share the remaining places beside it.
      longHoldCases(cases);
      expiryCases(cases);
      // Cases of other areas that wait for leases to lapse or be renewed: side by side with these, their waits overlap.
      heldLossCases(cases);
      observeRenewalCases(cases);
    });
    describe.concurrent('scheduled jobs', () => scheduledCases(cases));
    describe.concurrent('crash', () => crashCases(cases));
    describe.concurrent('faults', () => {
      faultCases(cases);
      abandonedGrantCases(cases);
      electionFaultCases(cases);
    });
    describe('lifecycle and bad input', () => lifecycleCases(cases));
  });
}
