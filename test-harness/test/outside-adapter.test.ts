import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, test } from 'vitest';

/**
 * An adapter written outside this repository: a project in a temp dir that sees Holdfast only
 * through the published entry points (@holdfast/core, @holdfast/core/backend, @holdfast/test-harness)
 * and runs the conformance suite on its own backend.
 */
const repo = fileURLToPath(new URL('../..', import.meta.url));
const project = mkdtempSync(join(tmpdir(), 'holdfast-outside-adapter-'));
afterAll(() => rmSync(project, { recursive: true, force: true }));

function link(packageName: string, target: string): void {
  const path = join(project, 'node_modules', packageName);
  mkdirSync(dirname(path), { recursive: true });
  symlinkSync(target, path, 'dir');
}

test('an outside project can import the suite and run it against its own adapter', async () => {
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'outside-adapter', type: 'module', private: true }));
  link('@holdfast/core', join(repo, 'packages/core'));
  link('@holdfast/test-harness', join(repo, 'test-harness'));
  link('vitest', dirname(createRequire(import.meta.url).resolve('vitest/package.json')));
  copyFileSync(fileURLToPath(new URL('./fixtures/simple-backend.ts', import.meta.url)), join(project, 'simple-backend.ts'));
  writeFileSync(
    join(project, 'adapter.test.ts'),
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
  const output = join(project, 'results.json');
  const vitest = join(project, 'node_modules/vitest/vitest.mjs');
  const child = spawn(process.execPath, [vitest, 'run', '--reporter=json', `--outputFile=${output}`], { cwd: project, stdio: 'ignore' });
  const [code] = await once(child, 'exit');
  const results = JSON.parse(readFileSync(output, 'utf8')) as { numPassedTests: number; numFailedTests: number };
  expect(results.numFailedTests).toBe(0);
  expect(results.numPassedTests).toBeGreaterThan(20);
  expect(code).toBe(0);
});
