import { beforeAll, describe, expect, test } from 'vitest';
import type { LineDefect } from './fixtures/cross-process/line-backend.mjs';
import { type AssertionResult, runNestedVitest } from './fixtures/nested-vitest.js';

/**
 * The fault cases must have teeth: run them against a cross-process lock (a line-protocol server in
 * a child process, see fixtures/cross-process) with planted defects, and check that each defect
 * fails the fault case that guards against it while the defect-free control passes them all.
 */
const EXPECTED_FAILURES: Record<Exclude<LineDefect, 'none'>, string | readonly string[]> = {
  'two-step-grant': 'F3. a stalled grab must not double-grant (tryAcquire, write 2',
  'deaf-to-signal': 'F1. a hung server does not hang the caller',
  // A holder told late fails both the cut-off lock (F5) and the cut-off leader (F7).
  'late-loss': ['F5. a cut connection', 'F7. a leader cut off past its lease'],
  'renews-after-lost': 'F4. a paused holder process is told it lost the lock',
  'lost-but-renewed': 'F6. a holder cut off until it is told it lost the lock',
  'lease-inflated': '23. a holder process killed with SIGKILL frees its lock',
  'immortal-waiters': ['64. a waiter whose process is killed with SIGKILL', '97. a writer waiting in a process killed with SIGKILL'],
  'undo-first': 'F8. an acquire aborted while its grant is held back on the way',
};

const NESTED_RUN_MS = 150_000;
/** The fault cases and the crash cases (holder 23, leader 58, waiters 64 and 97): what only a cross-process lock can fail. */
const SELECTED = /(F[1-9]|23|58|64|97)\. /;
let results: AssertionResult[] = [];

function faultResultsFor(defect: LineDefect): AssertionResult[] {
  return results.filter(
    (result) =>
      result.ancestorTitles[0] === `conformance: line(${defect})` &&
      ['faults', 'crash'].includes(result.ancestorTitles[1] ?? '') &&
      SELECTED.test(result.title),
  );
}

describe('the fault cases against a cross-process lock with planted defects', () => {
  beforeAll(async () => {
    results = await runNestedVitest(
      ['--config', 'test/fixtures/cross-process/vitest.config.ts', '--testNamePattern', SELECTED.source],
      NESTED_RUN_MS,
    );
  }, NESTED_RUN_MS + 10_000);

  test('the defect-free control passes every fault case', () => {
    const control = faultResultsFor('none');
    expect(control.filter((result) => result.status === 'passed').length, 'fault cases the control ran and passed').toBeGreaterThanOrEqual(
      10,
    );
    expect(control.filter((result) => result.status !== 'passed').map((result) => `${result.status}: ${result.title}`)).toEqual([]);
  });

  const expected = Object.entries(EXPECTED_FAILURES).flatMap(([defect, titles]) =>
    (typeof titles === 'string' ? [titles] : titles).map((title) => [defect, title] as const),
  );
  test.each(expected)('defect "%s" fails the case "%s"', (defect, caseTitle) => {
    const ran = faultResultsFor(defect as LineDefect);
    expect(ran.length, `no fault results for ${defect}`).toBeGreaterThanOrEqual(10);
    const failed = ran.filter((result) => result.status === 'failed').map((result) => result.title);
    expect(
      failed.some((title) => title.startsWith(caseTitle)),
      `failed cases: ${failed.join(' | ')}`,
    ).toBe(true);
  });
});
