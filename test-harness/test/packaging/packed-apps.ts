import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanEnv, describeResult, runCommand } from './run-command.js';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const LOCK_APP = fileURLToPath(new URL('../fixtures/packaged-app/lock-app.ts', import.meta.url));
const ATTW_VERSION = '0.18.5';

export interface PackedPackage {
  name: string;
  tarball: string;
  files: string[];
}

/** `npm pack` of every workspace package, as a user's registry install would receive it. */
export async function packWorkspaces(into: string): Promise<PackedPackage[]> {
  const result = await runCommand('npm', ['pack', '--workspaces', '--json', '--ignore-scripts', '--pack-destination', into], {
    cwd: REPO_ROOT,
    timeoutMs: 120_000,
  });
  if (result.code !== 0) throw new Error(describeResult('npm pack --workspaces', result));
  const packed = JSON.parse(result.stdout) as { name: string; filename: string; files: { path: string }[] }[];
  return packed.map((p) => ({ name: p.name, tarball: join(into, p.filename), files: p.files.map((f) => f.path) }));
}

/** The versions the repo itself is built and type-checked with, so the apps test the same compiler. */
async function installedVersion(name: string): Promise<string> {
  const manifest = JSON.parse(await readFile(join(REPO_ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string };
  return manifest.version;
}

const STRICT = { strict: true, noUncheckedIndexedAccess: true, skipLibCheck: false, types: ['node'], target: 'ES2022' };

export interface AppSpec {
  dir: string;
  type: 'module' | 'commonjs';
  packages: readonly string[];
  /** tsconfig file name -> compilerOptions beyond STRICT, plus the files it compiles. */
  tsconfigs: Record<string, { compilerOptions: Record<string, unknown>; files: string[] }>;
  /** The lock app is copied under these names. */
  appFiles: readonly string[];
  withTypeChecker?: boolean;
}

export const ESM_APP = (root: string): AppSpec => ({
  dir: join(root, 'esm-app'),
  type: 'module',
  packages: [
    '@holdfast/core',
    '@holdfast/memory',
    '@holdfast/redis',
    '@holdfast/consul',
    '@holdfast/mongodb',
    '@holdfast/postgres',
    '@holdfast/mysql',
    '@holdfast/etcd',
    '@holdfast/zookeeper',
    '@holdfast/cli',
  ],
  tsconfigs: {
    'tsconfig.json': {
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', outDir: 'out/nodenext' },
      files: ['lock-app.ts'],
    },
  },
  appFiles: ['lock-app.ts'],
});

export const CJS_APP = (root: string): AppSpec => ({
  dir: join(root, 'cjs-app'),
  type: 'commonjs',
  packages: [
    '@holdfast/core',
    '@holdfast/memory',
    '@holdfast/redis',
    '@holdfast/consul',
    '@holdfast/mongodb',
    '@holdfast/postgres',
    '@holdfast/mysql',
    '@holdfast/etcd',
    '@holdfast/zookeeper',
    // Its peers (@nestjs/common, @nestjs/core, reflect-metadata, rxjs) come with it: npm installs peers.
    '@holdfast/nestjs',
    '@holdfast/opentelemetry',
    '@holdfast/test-harness',
  ],
  tsconfigs: {
    'tsconfig.json': {
      compilerOptions: { module: 'CommonJS', moduleResolution: 'Node10', esModuleInterop: true, outDir: 'out/node10' },
      files: ['lock-app.ts'],
    },
    'tsconfig.nodenext.json': {
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', outDir: 'out/nodenext' },
      files: ['lock-app.cts'],
    },
  },
  appFiles: ['lock-app.ts', 'lock-app.cts'],
  withTypeChecker: true,
});

/**
 * A fresh app outside the repo: package.json naming the tarballs plus typescript and @types/node,
 * the lock app, its tsconfigs, then one `npm install`.
 */
export async function createApp(spec: AppSpec, packed: readonly PackedPackage[]): Promise<void> {
  await mkdir(spec.dir, { recursive: true });
  const tarballOf = (name: string): string => {
    const found = packed.find((p) => p.name === name);
    if (!found) throw new Error(`${name} was not packed (packed: ${packed.map((p) => p.name).join(', ')})`);
    return `file:${found.tarball}`;
  };
  const dependencies: Record<string, string> = Object.fromEntries(spec.packages.map((name) => [name, tarballOf(name)]));
  dependencies['typescript'] = await installedVersion('typescript');
  dependencies['@types/node'] = await installedVersion('@types/node');
  if (spec.withTypeChecker) dependencies['@arethetypeswrong/core'] = ATTW_VERSION;
  // The optional peer behind @holdfast/core/typedi, so that entry point loads too.
  if (spec.packages.includes('@holdfast/test-harness')) dependencies['typedi'] = await installedVersion('typedi');
  // @holdfast/opentelemetry's peer, and the SDK a user records into (issue 27 item 5's script).
  if (spec.packages.includes('@holdfast/opentelemetry')) {
    for (const name of ['@opentelemetry/api', '@opentelemetry/sdk-metrics', '@opentelemetry/sdk-trace-base']) {
      dependencies[name] = await installedVersion(name);
    }
  }
  await writeFile(
    join(spec.dir, 'package.json'),
    JSON.stringify({ name: `holdfast-${spec.type}-app`, private: true, type: spec.type, dependencies }, null, 2),
  );
  for (const [name, config] of Object.entries(spec.tsconfigs)) {
    await writeFile(
      join(spec.dir, name),
      JSON.stringify({ compilerOptions: { ...STRICT, ...config.compilerOptions }, files: config.files }, null, 2),
    );
  }
  for (const name of spec.appFiles) await copyFile(LOCK_APP, join(spec.dir, name));
  const install = await runCommand(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'],
    {
      cwd: spec.dir,
      timeoutMs: 300_000,
    },
  );
  if (install.code !== 0) throw new Error(describeResult(`npm install in ${spec.dir}`, install));
}

/** Compiles one of the app's tsconfigs (strict); the result is asserted by the caller. */
export function typeCheck(spec: AppSpec, tsconfig: string) {
  return runCommand(process.execPath, [join(spec.dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', tsconfig], {
    cwd: spec.dir,
    timeoutMs: 120_000,
  });
}

/** Runs a compiled app file with only HOLDFAST_URL set for Holdfast. */
export function runApp(spec: AppSpec, compiled: string, url: string) {
  return runCommand(process.execPath, [compiled], { cwd: spec.dir, timeoutMs: 60_000, env: cleanEnv({ HOLDFAST_URL: url }) });
}
