import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// The real code of an earlier version, for rolling-upgrade tests: its own core and Redis adapter,
// taken from git and bundled into one module (ioredis left external), so that old and new providers
// run side by side in one process, each with its own classes, as two app versions would.

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
/** Inside the package, so that the bundle's `import 'ioredis'` resolves; ignored by git (.gitignore). */
const builds = join(here, '..', '.old-versions');

/** Bundles `packages/core` and `packages/redis` of `commit` once per checkout; returns the module's `createRedisProvider`. */
export async function oldRedisAdapter(commit: string): Promise<typeof import('../src/index.js')> {
  const out = join(builds, commit, 'redis.mjs');
  if (!existsSync(out)) {
    const source = join(builds, commit, 'src');
    rmSync(source, { recursive: true, force: true });
    mkdirSync(source, { recursive: true });
    const root = (await run('git', ['rev-parse', '--show-toplevel'], { cwd: here })).stdout.trim();
    const archive = join(builds, commit, 'source.tar');
    await run('git', ['archive', '--output', archive, commit, 'packages/core/src', 'packages/redis/src'], { cwd: root });
    await run('tar', ['-xf', archive, '-C', source]);
    writeFileSync(
      join(source, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          paths: {
            '@holdfast/core': ['./packages/core/src/index.ts'],
            '@holdfast/core/backend': ['./packages/core/src/backend-index.ts'],
          },
        },
      }),
    );
    const esbuild = join(root, 'node_modules', '.bin', 'esbuild');
    await run(esbuild, [
      join(source, 'packages/redis/src/index.ts'),
      '--bundle',
      '--platform=node',
      '--format=esm',
      '--target=node20',
      '--external:ioredis',
      `--tsconfig=${join(source, 'tsconfig.json')}`,
      `--outfile=${out}`,
    ]);
  }
  return (await import(out)) as typeof import('../src/index.js');
}
