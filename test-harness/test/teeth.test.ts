import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Defect } from './fixtures/simple-backend.js';

/**
 * The suite must have teeth: run it against deliberately broken providers and check that each
 * defect makes the case that guards against it fail, while the defect-free control passes.
 */
const EXPECTED_FAILURES: Record<Exclude<Defect, 'none'>, string> = {
  'double-grant': '2. a held key is refused at once',
  'foreign-release': '20. releasing a lock whose TTL passed and which someone else now holds is a no-op',
  'flat-token': '25. tokens strictly increase per key',
  'never-expires': '13. a holder that stops renewing loses the lock after its TTL',
  'silent-loss': '18/19/24. a holder is told when its lock is deleted externally',
  'deaf-waiter': '9. a waiter acquires promptly once the holder releases',
  'timer-leak': '30. close() leaves no timers behind',
};

interface AssertionResult {
  ancestorTitles: string[];
  title: string;
  status: 'passed' | 'failed' | 'skipped' | 'pending';
}

const harnessRoot = fileURLToPath(new URL('..', import.meta.url));
const vitestCli = join(createRequire(import.meta.url).resolve('vitest/package.json'), '..', 'vitest.mjs');
let outputDir: string;
let results: AssertionResult[] = [];

function resultsFor(defect: Defect): AssertionResult[] {
  return results.filter((result) => result.ancestorTitles[0] === `conformance: simple(${defect})`);
}

describe('the conformance suite against deliberately broken providers', () => {
  beforeAll(async () => {
    outputDir = mkdtempSync(join(tmpdir(), 'holdfast-teeth-'));
    const outputFile = join(outputDir, 'results.json');
    const run = spawn(
      process.execPath,
      [vitestCli, 'run', '--config', 'test/fixtures/vitest.broken.config.ts', '--reporter=json', `--outputFile=${outputFile}`],
      { cwd: harnessRoot, stdio: 'ignore', timeout: 170_000 },
    );
    await once(run, 'exit');
    results = (JSON.parse(readFileSync(outputFile, 'utf8')) as { testResults: { assertionResults: AssertionResult[] }[] }).testResults.flatMap(
      (file) => file.assertionResults,
    );
  }, 180_000);

  afterAll(() => rmSync(outputDir, { recursive: true, force: true }));

  test('the defect-free control passes every case it runs', () => {
    const control = resultsFor('none');
    expect(control.length).toBeGreaterThan(20);
    expect(control.filter((result) => result.status === 'failed').map((result) => result.title)).toEqual([]);
  });

  test.each(Object.entries(EXPECTED_FAILURES))('defect "%s" fails the case "%s"', (defect, caseTitle) => {
    const ran = resultsFor(defect as Defect);
    expect(ran.length, `no results for ${defect}`).toBeGreaterThan(20);
    const failed = ran.filter((result) => result.status === 'failed').map((result) => result.title);
    expect(failed.some((title) => title.startsWith(caseTitle)), `failed cases: ${failed.join(' | ')}`).toBe(true);
  });
});
