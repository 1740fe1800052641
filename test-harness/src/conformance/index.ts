import type { Capabilities } from '@holdfast/core';
import { beforeAll, describe } from 'vitest';
import { crashCases } from './crash.js';
import { waitingCases } from './waiting.js';
import { exclusionCases } from './exclusion.js';
import { expiryCases } from './expiry.js';
import { fencingCases } from './fencing.js';
import { inspectionCases } from './inspection.js';
import { lifecycleCases } from './lifecycle.js';
import { ownershipCases } from './ownership.js';
import type { CaseFactory } from './suite-types.js';
import { CaseContext, resolveTiming } from './support.js';
import type { ConformanceTarget } from './target.js';

export type { ConformanceTarget } from './target.js';
export { FencedResource } from './fencing.js';

/** Ceiling for a single case; each case enforces its own, much tighter, timing bounds. */
const CASE_TIMEOUT_MS = 120_000;

/**
 * Registers the Holdfast conformance suite for one adapter as vitest suites. Call it at the top
 * level of a test file. Capabilities are read from a first provider instance and select the
 * optional cases; skipped cases print why.
 */
export function defineConformanceSuite(target: ConformanceTarget): void {
  describe(`conformance: ${target.name}`, { timeout: CASE_TIMEOUT_MS }, () => {
    let capabilities: Capabilities | undefined;
    beforeAll(async () => {
      const probe = await target.createProvider();
      capabilities = probe.capabilities;
      await probe.close();
    }, CASE_TIMEOUT_MS);
    const cases: CaseFactory = (test) => {
      if (!capabilities) throw new Error('capabilities were not read: createProvider() failed in beforeAll');
      return new CaseContext(target, capabilities, resolveTiming(target, capabilities), test);
    };
    describe('exclusion', () => exclusionCases(cases));
    describe('waiting', () => waitingCases(cases));
    describe('expiry and renewal', () => expiryCases(cases));
    describe('ownership', () => ownershipCases(cases));
    describe('fencing', () => fencingCases(cases));
    describe('inspection', () => inspectionCases(cases));
    describe('lifecycle and bad input', () => lifecycleCases(cases));
    describe('crash', () => crashCases(cases));
  });
}
