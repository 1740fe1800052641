// What a user gets from the registry: every package packed by `npm pack`, installed from the tarballs
// into fresh ESM and CommonJS apps outside the repo, type-checked strictly, the same app file run on
// every backend with only HOLDFAST_URL changed, and the CLI run from the installed package.
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort } from '../src/servers/index.js';
import { useBackend } from '../src/servers/vitest.js';
import { NEST_CJS, NEST_ESM } from './packaging/nest-script.js';
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
import { BAD_SQL_URLS, HAND_OFF, NEVER_ANSWERED, OPENTELEMETRY, OWN_FORCE_RELEASE, SCHEDULED } from './packaging/users-scripts.js';

const redis = await useBackend('redis');
const consul = await useBackend('consul');
const mongodb = await useBackend('mongodb');
const postgres = await useBackend('postgres');
const mysql = await useBackend('mysql');
const etcd = await useBackend('etcd');
const zookeeper = await useBackend('zookeeper');

const LIBRARIES = [
  '@holdfast/core',
  '@holdfast/memory',
  '@holdfast/redis',
  '@holdfast/consul',
  '@holdfast/mongodb',
  '@holdfast/postgres',
  '@holdfast/mysql',
  '@holdfast/etcd',
  '@holdfast/zookeeper',
  '@holdfast/nestjs',
  '@holdfast/opentelemetry',
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
  '@holdfast/etcd',
  '@holdfast/zookeeper',
  '@holdfast/nestjs',
  '@holdfast/opentelemetry',
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
    { name: 'etcd', url: etcd.url },
    { name: 'zookeeper', url: zookeeper.url },
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

  test.skipIf(redis.url === null)('issue 27 item 6: the installed CLI shows a held lock with holdfast watch (--once)', async () => {
    const holdfast = join(esmApp.dir, 'node_modules', '.bin', 'holdfast');
    const prefix = `packaged-watch/${process.pid}/`;
    const watched = await runCommand(
      holdfast,
      [
        'run',
        '--backend',
        redis.url!,
        '--reason',
        'packaged',
        `${prefix}job`,
        '--',
        holdfast,
        'watch',
        '--once',
        '--backend',
        redis.url!,
        prefix,
      ],
      { cwd: esmApp.dir, timeoutMs: 60_000, env: cleanEnv() },
    );
    expect(watched.code, describeResult('holdfast run -- holdfast watch --once', watched)).toBe(0);
    expect(watched.stdout).toMatch(new RegExp(`^${prefix}job\\s+\\S+\\s+\\d+\\s+packaged\\s+\\[#+-*\\] \\d+\\.\\ds$`, 'm'));
  });

  /** Runs one script in the CommonJS app (every library installed), returning its JSON line and how long the process lived. */
  async function script(name: string, text: string, args: string[] = []): Promise<{ out: Record<string, unknown>; ms: number }> {
    const file = join(cjsApp.dir, name);
    await writeFile(file, text);
    const started = performance.now();
    const run = await runCommand(process.execPath, [file, ...args], { cwd: cjsApp.dir, timeoutMs: 60_000, env: cleanEnv() });
    expect(run.code, describeResult(name, run)).toBe(0);
    return { out: JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>, ms: performance.now() - started };
  }

  test('issue 27 item 1: a backend that never answered fails at once, in the library and the installed CLI (exit 69)', async () => {
    const port = String(await freePort());
    const { out } = await script('never-answered.mjs', NEVER_ANSWERED, [port]);
    expect(out).toMatchObject({ code: 'HOLDFAST_BACKEND', neverAnswered: true });
    expect(out['ms'] as number).toBeLessThan(3000);
    const holdfast = join(esmApp.dir, 'node_modules', '.bin', 'holdfast');
    const cli = await runCommand(holdfast, ['run', '--backend', `redis://127.0.0.1:${port}`, 'k', '--', 'true'], {
      cwd: esmApp.dir,
      timeoutMs: 60_000,
      env: cleanEnv(),
    });
    expect(cli.code, describeResult('holdfast run at a closed port', cli)).toBe(69);
    expect(cli.stderr).toMatch(/never answered/);
  });

  test('issue 27 item 2: forceRelease through the provider that holds the key has told the holder when it resolves', async () => {
    // Redis told its own holder only at the next renewal before; memory where no Redis can be had.
    const url = redis.url ?? 'memory:';
    const { out } = await script('own-force-release.mjs', OWN_FORCE_RELEASE, [url]);
    expect(out).toEqual({
      backend: redis.url ? 'redis' : 'memory',
      freed: true,
      toldBeforeReturn: true,
      reason: 'HOLDFAST_LOST',
      free: true,
    });
  });

  test('issue 27 item 9: URL settings the SQL adapters used to accept are InvalidArgumentErrors, and nothing reaches the server', async () => {
    const { out } = await script('bad-sql-urls.mjs', BAD_SQL_URLS);
    expect(out).toEqual({ codes: Array(8).fill('HOLDFAST_INVALID_ARGUMENT'), connections: 0 });
  });

  test('issue 27 item 4: runExclusive runs once, keeps the lock until atLeastFor, and lets the process exit at once', async () => {
    const { out, ms } = await script('scheduled.mjs', SCHEDULED);
    expect(out).toMatchObject({ ran: true, value: 'once', skipped: false, keptAfterJob: true });
    expect(out['freeAt'] as number).toBeGreaterThanOrEqual(1000);
    // The last run's lock is kept 30 s on its lease: no timer may hold the process that long.
    expect(ms).toBeLessThan(15_000);
  });

  test('issue 27 item 7: a lock handed off as JSON is resumed by another provider with its token, renewed, and a stale proof is refused', async () => {
    const { out } = await script('hand-off.mjs', HAND_OFF);
    expect(out).toEqual({ sameToken: true, oldSignal: 'HOLDFAST_HANDED_OFF', stillHeld: true, staleCode: 'HOLDFAST_LOST' });
  });

  test('issue 27 item 3: a Nest application uses HoldfastModule, @WithLock and @LeaderOnly, as ES module and CommonJS, and exits after app.close()', async () => {
    const url = redis.url ?? 'memory:';
    for (const [name, text] of [
      ['nest-app.mjs', NEST_ESM],
      ['nest-app.cjs', NEST_CJS],
    ] as const) {
      const { out } = await script(name, text, [url]);
      expect(out, name).toMatchObject({
        key: 'order:7',
        missingPath: 'HOLDFAST_INVALID_ARGUMENT',
        busy: 'HOLDFAST_TIMEOUT',
        skippedFirst: true,
        leaderOnly: ['ran', 'undefined'],
        afterClose: 'HOLDFAST_PROVIDER_CLOSED',
      });
      expect(String(out['backend']), name).toBe(redis.url ? 'redis' : 'memory');
    }
  });

  test('issue 27 item 5: @holdfast/opentelemetry records spans and metrics into the SDK, labelled by backend and key label', async () => {
    const { out } = await script('opentelemetry.mjs', OPENTELEMETRY);
    expect(out).toEqual({
      busyAnswer: true,
      spans: [
        ['holdfast.acquire', 'granted'],
        ['holdfast.acquire', 'busy'],
        ['holdfast.hold', 'force-released'],
      ],
      grants: 1,
      busy: 1,
      losses: [{ 'holdfast.backend': 'memory', 'holdfast.lock.key': 'packaged', 'holdfast.loss.reason': 'force-released' }],
      holdUnit: 's',
      subscribedAfterDispose: false,
      tokenOnHold: true,
    });
  });
});
