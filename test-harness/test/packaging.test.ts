// What a user gets from the registry: every package packed by `npm pack`, installed from the tarballs
// into fresh ESM and CommonJS apps outside the repo, type-checked strictly, the same app file run on
// every backend with only HOLDFAST_URL changed, and the CLI run from the installed package.
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useBackend } from '../src/servers/vitest.js';
import {
  type AppSpec,
  CJS_APP,
  createApp,
  ESM_APP,
  type PackedPackage,
  packWorkspaces,
  runApp,
  typeCheck,
} from './packaging/packed-apps.js';
import { cleanEnv, describeResult, runCommand } from './packaging/run-command.js';
import { unresolvedMapSources } from './packaging/source-maps.js';

const redis = await useBackend('redis');
const consul = await useBackend('consul');
const mongodb = await useBackend('mongodb');
const postgres = await useBackend('postgres');
const mysql = await useBackend('mysql');

const LIBRARIES = [
  '@holdfast/core',
  '@holdfast/memory',
  '@holdfast/redis',
  '@holdfast/consul',
  '@holdfast/mongodb',
  '@holdfast/postgres',
  '@holdfast/mysql',
  '@holdfast/test-harness',
];
/** Every export subpath of the libraries; the harness's suite entries import vitest, which refuses require(). */
const ENTRY_POINTS = [
  '@holdfast/core',
  '@holdfast/core/typedi',
  '@holdfast/core/backend',
  '@holdfast/memory',
  '@holdfast/redis',
  '@holdfast/consul',
  '@holdfast/mongodb',
  '@holdfast/postgres',
  '@holdfast/mysql',
  '@holdfast/test-harness/servers',
  '@holdfast/test-harness/faults',
  '@holdfast/test-harness/helpers',
];
const VITEST_ENTRY_POINTS = ['@holdfast/test-harness', '@holdfast/test-harness/servers/vitest'];

interface Manifest {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/** The CLI is installed in the ESM app only, everything else in the CommonJS app. */
const cjsOrEsmDir = (name: string): string => (name === '@holdfast/cli' ? esmApp.dir : cjsApp.dir);

let work = '';
let packed: PackedPackage[] = [];
let esmApp: AppSpec;
let cjsApp: AppSpec;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'holdfast-packaging-'));
  packed = await packWorkspaces(work);
  esmApp = ESM_APP(work);
  cjsApp = CJS_APP(work);
  await Promise.all([createApp(esmApp, packed), createApp(cjsApp, packed)]);
}, 420_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe('packed packages', () => {
  test('every package ships both builds, its sources, LICENSE and README, and no tests', () => {
    expect(packed.map((p) => p.name).sort()).toEqual([...LIBRARIES, '@holdfast/cli'].sort());
    for (const p of packed) {
      const must = ['package.json', 'LICENSE', 'README.md', 'src/index.ts', 'dist/index.js', 'dist/index.d.ts', 'dist/index.js.map'];
      if (p.name !== '@holdfast/cli') must.push('dist/cjs/package.json', 'dist/cjs/index.js', 'dist/cjs/index.d.ts');
      else must.push('bin/holdfast.js');
      expect(
        must.filter((f) => !p.files.includes(f)),
        `${p.name} lacks`,
      ).toEqual([]);
      expect(
        p.files.filter((f) => f.startsWith('test/')),
        `${p.name} ships tests`,
      ).toEqual([]);
    }
  });

  test('publishing metadata, and core as a peer so that one copy of core serves every adapter', async () => {
    for (const name of [...LIBRARIES, '@holdfast/cli']) {
      const manifest = JSON.parse(await readFile(join(cjsOrEsmDir(name), 'node_modules', name, 'package.json'), 'utf8')) as Manifest;
      expect(manifest, name).toMatchObject({
        license: 'MIT',
        publishConfig: { access: 'public' },
        repository: { type: 'git', url: expect.stringMatching(/^git\+https:\/\/github\.com\/.+\.git$/), directory: expect.any(String) },
        homepage: expect.stringMatching(/^https:\/\//),
      });
      if (name === '@holdfast/core' || name === '@holdfast/cli') continue;
      expect(manifest.peerDependencies?.['@holdfast/core'], `${name} peer-depends on core`).toMatch(/^\^/);
      expect(manifest.dependencies?.['@holdfast/core'], `${name} must not depend on its own core`).toBeUndefined();
    }
    for (const app of [esmApp, cjsApp]) {
      const nested = (await readdir(join(app.dir, 'node_modules', '@holdfast'))).filter((pkg) =>
        existsSync(join(app.dir, 'node_modules', '@holdfast', pkg, 'node_modules', '@holdfast', 'core')),
      );
      expect(nested, `${app.type} app: packages with a nested second core`).toEqual([]);
    }
  });

  test('types resolve in every resolution mode (arethetypeswrong: node10, node16 CJS and ESM, bundler)', async () => {
    const script = join(cjsApp.dir, 'check-types.mjs');
    await writeFile(
      script,
      `import { checkPackage, createPackageFromTarballData } from '@arethetypeswrong/core';
import { readFileSync } from 'node:fs';
const report = {};
for (const tarball of process.argv.slice(2)) {
  const result = await checkPackage(createPackageFromTarballData(new Uint8Array(readFileSync(tarball))));
  report[tarball] = { types: result.types !== false, problems: result.problems ?? [], entrypoints: Object.keys(result.entrypoints ?? {}) };
}
console.log(JSON.stringify(report));
`,
    );
    const result = await runCommand(process.execPath, [script, ...packed.map((p) => p.tarball)], { cwd: cjsApp.dir, timeoutMs: 120_000 });
    expect(result.code, describeResult('arethetypeswrong', result)).toBe(0);
    const report = JSON.parse(result.stdout) as Record<
      string,
      { types: boolean; problems: { kind: string; entrypoint: string; resolutionKind?: string }[]; entrypoints: string[] }
    >;
    for (const p of packed) {
      const checked = report[p.tarball]!;
      expect(checked.types, `${p.name} has types`).toBe(true);
      // The CLI is an executable; its module is ESM-only on purpose.
      const esmOnly = p.name === '@holdfast/cli';
      const problems = checked.problems.filter((problem) => !esmOnly || !['node10', 'node16-cjs'].includes(problem.resolutionKind ?? ''));
      expect(problems, `${p.name}: problems`).toEqual([]);
    }
    expect(report[packed.find((p) => p.name === '@holdfast/core')!.tarball]!.entrypoints).toEqual([
      '.',
      './typedi',
      './backend',
      './package.json',
    ]);
  });

  test('source and declaration maps resolve inside every installed package', async () => {
    for (const name of LIBRARIES) {
      const { maps, missing } = await unresolvedMapSources(join(cjsApp.dir, 'node_modules', name));
      expect(maps, `${name} has maps`).toBeGreaterThan(0);
      expect(missing, `${name}: map sources missing from the package`).toEqual([]);
    }
  });

  test('every entry point loads with import and with require(), with the same exports', async () => {
    const script = join(cjsApp.dir, 'load-entry-points.mjs');
    await writeFile(
      script,
      `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const outcome = (load) => { try { return Object.keys(load()).sort(); } catch (error) { return 'error: ' + String(error.message).split('\\n')[0]; } };
const report = {};
for (const spec of JSON.parse(process.argv[2])) {
  let imported;
  try { imported = Object.keys(await import(spec)).sort(); } catch (error) { imported = 'error: ' + String(error.message).split('\\n')[0]; }
  report[spec] = { imported, required: outcome(() => require(spec)) };
}
const core = await import('@holdfast/core');
const cjsCore = require('@holdfast/core');
report.dualCore = {
  separateCopies: core.createLockProvider !== cjsCore.createLockProvider,
  errorsCrossCopies: new cjsCore.LockTimeoutError('k', 1) instanceof core.LockTimeoutError && core.isHoldfastError(new cjsCore.InvalidArgumentError('k', 'x'), 'HOLDFAST_INVALID_ARGUMENT'),
};
console.log(JSON.stringify(report));
`,
    );
    const result = await runCommand(process.execPath, [script, JSON.stringify([...ENTRY_POINTS, ...VITEST_ENTRY_POINTS])], {
      cwd: cjsApp.dir,
      timeoutMs: 60_000,
    });
    expect(result.code, describeResult('load-entry-points', result)).toBe(0);
    const report = JSON.parse(result.stdout) as Record<string, { imported: string[] | string; required: string[] | string }> & {
      dualCore: { separateCopies: boolean; errorsCrossCopies: boolean };
    };
    for (const spec of ENTRY_POINTS) {
      const { imported, required } = report[spec]!;
      expect(Array.isArray(imported) && imported.length > 0, `${spec} import: ${String(imported)}`).toBe(true);
      expect(required, `${spec}: require() gives the same exports as import`).toEqual(imported);
    }
    for (const spec of VITEST_ENTRY_POINTS) {
      expect(Array.isArray(report[spec]!.imported), `${spec} import: ${String(report[spec]!.imported)}`).toBe(true);
      expect(report[spec]!.required).toMatch(/Vitest cannot be imported in a CommonJS module using require\(\)/);
    }
    // The dual-package hazard: require and import load two copies of core; errors still match across them.
    expect(report.dualCore).toEqual({ separateCopies: true, errorsCrossCopies: true });
  });
});

describe('fresh apps from the tarballs', () => {
  test('the ESM app type-checks strictly (module nodenext)', async () => {
    const result = await typeCheck(esmApp, 'tsconfig.json');
    expect(result.code, describeResult('tsc (ESM, nodenext)', result)).toBe(0);
  });

  test('the CommonJS app type-checks strictly (module commonjs + node10, and nodenext on a .cts file)', async () => {
    const [node10, cts] = await Promise.all([typeCheck(cjsApp, 'tsconfig.json'), typeCheck(cjsApp, 'tsconfig.nodenext.json')]);
    expect(node10.code, describeResult('tsc (CommonJS, node10)', node10)).toBe(0);
    expect(cts.code, describeResult('tsc (CommonJS, nodenext .cts)', cts)).toBe(0);
  });

  const backends = [
    { name: 'memory', url: 'memory:' },
    { name: 'redis', url: redis.url },
    { name: 'consul', url: consul.url },
    { name: 'mongodb', url: mongodb.url },
    { name: 'postgres', url: postgres.url },
    { name: 'mysql', url: mysql.url },
  ];
  for (const backend of backends) {
    test.skipIf(backend.url === null)(`the same app file runs on ${backend.name} as ESM, CommonJS and .cts`, async () => {
      const url = backend.url!;
      const compiled: [AppSpec, string][] = [
        [esmApp, 'out/nodenext/lock-app.js'],
        [cjsApp, 'out/node10/lock-app.js'],
        [cjsApp, 'out/nodenext/lock-app.cjs'],
      ];
      const runs = await Promise.all(compiled.map(([app, file]) => runApp(app, join(app.dir, file), url)));
      runs.forEach((run, i) => {
        const what = `${compiled[i]![1]} (${compiled[i]![0].type}) on ${backend.name}`;
        expect(run.code, describeResult(what, run)).toBe(0);
        const output = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
        expect(output, what).toMatchObject({
          rivalBusy: true,
          freeAfterRelease: true,
          badKeyIsTyped: true,
          inspectedOwner: output['owner'],
        });
        expect(String(output['backend']).toLowerCase(), what).toContain(backend.name);
        expect(BigInt(String(output['token'])), `${what}: fencing token`).toBeGreaterThan(0n);
      });
    });
  }

  test.skipIf(redis.url === null)(
    'the installed CLI runs a command under a Redis lock, and inspect shows the holder meanwhile',
    async () => {
      const holdfast = join(esmApp.dir, 'node_modules', '.bin', 'holdfast');
      const cli = (args: string[]) => runCommand(holdfast, args, { cwd: esmApp.dir, timeoutMs: 60_000, env: cleanEnv() });
      const key = `packaged-cli/${process.pid}`;
      const plain = await cli(['run', '--backend', redis.url!, key, '--', 'true']);
      expect(plain.code, describeResult('holdfast run -- true', plain)).toBe(0);

      const nested = await cli(['run', '--backend', redis.url!, key, '--', holdfast, 'inspect', '--json', '--backend', redis.url!, key]);
      expect(nested.code, describeResult('holdfast run -- holdfast inspect', nested)).toBe(0);
      const held = JSON.parse(nested.stdout) as { key?: string; owner?: string } | null;
      expect(held?.key, `inspect during run: ${nested.stdout}`).toBe(key);

      const after = await cli(['inspect', '--json', '--backend', redis.url!, key]);
      expect(after.code, describeResult('holdfast inspect', after)).toBe(0);
      expect(after.stdout.trim()).toBe('null');
    },
  );
});
