import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, test } from 'vitest';

/**
 * An adapter written outside this repository: a project in a temp dir that sees Holdfast only
 * through the published entry points (@holdfast/core, @holdfast/core/backend, @holdfast/test-harness)
 * and runs the conformance suite on its own backend.
 */
const repo = fileURLToPath(new URL('../..', import.meta.url));
const projects: string[] = [];
afterAll(() => {
  for (const project of projects) rmSync(project, { recursive: true, force: true });
});

function link(project: string, packageName: string, target: string): void {
  const path = join(project, 'node_modules', packageName);
  mkdirSync(dirname(path), { recursive: true });
  symlinkSync(target, path, 'dir');
}

interface VitestJsonResults {
  numPassedTests: number;
  numFailedTests: number;
  testResults: { assertionResults: { status: string; fullName: string; failureMessages: string[] }[] }[];
}

/** Each failed case with its first message, so that a failure in the child run says which case and why. */
function failuresOf(results: VitestJsonResults): string[] {
  return results.testResults.flatMap((file) =>
    file.assertionResults
      .filter((result) => result.status === 'failed')
      .map((result) => `${result.fullName}: ${(result.failureMessages[0] ?? '').split('\n').slice(0, 12).join('\n')}`),
  );
}

/** Writes the project's files and the test that runs the suite on its adapter; returns vitest's results. */
async function runSuiteOutside(
  adapterFiles: readonly string[],
  suiteSource: string,
): Promise<{ code: unknown; passed: number; failed: number; failures: string[] }> {
  const project = mkdtempSync(join(tmpdir(), 'holdfast-outside-adapter-'));
  projects.push(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'outside-adapter', type: 'module', private: true }));
  link(project, '@holdfast/core', join(repo, 'packages/core'));
  link(project, '@holdfast/test-harness', join(repo, 'test-harness'));
  link(project, 'vitest', dirname(createRequire(import.meta.url).resolve('vitest/package.json')));
  for (const file of adapterFiles) copyFileSync(file, join(project, basename(file)));
  writeFileSync(join(project, 'adapter.test.ts'), suiteSource);
  const output = join(project, 'results.json');
  const vitest = join(project, 'node_modules/vitest/vitest.mjs');
  const child = spawn(process.execPath, [vitest, 'run', '--reporter=json', `--outputFile=${output}`], { cwd: project, stdio: 'ignore' });
  const [code] = await once(child, 'exit');
  const results = JSON.parse(readFileSync(output, 'utf8')) as VitestJsonResults;
  return { code, passed: results.numPassedTests, failed: results.numFailedTests, failures: failuresOf(results) };
}

test('an outside project can import the suite and run it against its own adapter', async () => {
  const { code, passed, failed, failures } = await runSuiteOutside(
    // The adapter and the read-write part it imports.
    ['./fixtures/simple-backend.ts', './fixtures/simple-read-write.ts'].map((file) => fileURLToPath(new URL(file, import.meta.url))),
    `import { createProvider } from '@holdfast/core/backend';
import { defineConformanceSuite } from '@holdfast/test-harness';
import { SimpleBackend, SimpleState } from './simple-backend.js';

const state = new SimpleState();
defineConformanceSuite({
  name: 'outside adapter',
  createProvider: () => createProvider(new SimpleBackend(state, 'none')),
  shortTtlMs: 300,
  promptWakeMs: 300,
});
`,
  );
  expect(failures).toEqual([]);
  expect(failed).toBe(0);
  expect(passed).toBeGreaterThan(20);
  expect(code).toBe(0);
});

test('the complete example adapter of docs/writing-an-adapter.md passes the suite, FIFO cases included', async () => {
  const { code, passed, failed, failures } = await runSuiteOutside(
    [join(repo, 'docs/examples/table-backend.ts')],
    `import { defineConformanceSuite } from '@holdfast/test-harness';
import { createTableProvider, LockTable } from './table-backend.js';

const table = new LockTable();
defineConformanceSuite({ name: 'table', createProvider: () => createTableProvider(table), shortTtlMs: 600, promptWakeMs: 300 });
`,
  );
  expect(failures).toEqual([]);
  expect(failed).toBe(0);
  expect(passed).toBeGreaterThan(20);
  expect(code).toBe(0);
});
