import type { TestContext } from 'vitest';
import type { CaseContext } from './support.js';

/** Builds a test's CaseContext; available once the suite's beforeAll has read the capabilities. */
export type CaseFactory = (test: TestContext) => CaseContext;

export interface SuiteOptions {
  /**
   * Run only the cases whose titles start with one of these (e.g. `['13.', '18/19/24.']`); the
   * others are skipped. For debugging one behaviour, and for the harness's own planted-defect tests.
   */
  readonly only?: readonly string[];
}
