import { existsSync } from 'node:fs';
import { join } from 'node:path';
import packageDir from '../package-dir.cjs';

/**
 * The path of one of the harness's child-process scripts (ESM, in dist/ whichever build, ESM or
 * CommonJS, asks; also when vitest runs the harness from src/).
 */
export function childScript(distRelativeJs: string): string {
  const script = join(packageDir.harnessDir(), 'dist', distRelativeJs);
  if (existsSync(script)) return script;
  throw new Error(`child script ${script} not found: build the test harness first (npm run build)`);
}
