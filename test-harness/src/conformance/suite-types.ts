import type { TestContext } from 'vitest';
import type { CaseContext } from './support.js';

/** Builds a test's CaseContext; available once the suite's beforeAll has read the capabilities. */
export type CaseFactory = (test: TestContext) => CaseContext;
