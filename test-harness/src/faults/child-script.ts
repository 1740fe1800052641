import { existsSync } from 'node:fs';
import { sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The compiled path of one of the harness's child-process scripts. Run from the TypeScript sources
 * (vitest on src/), the sibling .js does not exist; the built copy in dist/ is used instead.
 */
export function childScript(relativeJs: string, from: string): string {
  const beside = fileURLToPath(new URL(relativeJs, from));
  if (existsSync(beside)) return beside;
  const at = beside.lastIndexOf(`${sep}src${sep}`);
  const fromDist = at < 0 ? beside : `${beside.slice(0, at)}${sep}dist${sep}${beside.slice(at + 5)}`;
  if (existsSync(fromDist)) return fromDist;
  throw new Error(`child script ${relativeJs} not found at ${beside} or ${fromDist}: build the test harness first (npm run build)`);
}
