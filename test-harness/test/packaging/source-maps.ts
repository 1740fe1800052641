import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';

/** Every source of every .map under dir that does not exist (maps must resolve inside the package). */
export async function unresolvedMapSources(dir: string): Promise<{ maps: number; missing: string[] }> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const maps = entries.filter((e) => e.isFile() && e.name.endsWith('.map') && !relative(dir, e.parentPath).includes('node_modules'));
  const missing: string[] = [];
  for (const map of maps) {
    const file = join(map.parentPath, map.name);
    const parsed = JSON.parse(await readFile(file, 'utf8')) as { sources: string[]; sourceRoot?: string };
    for (const source of parsed.sources) {
      const target = resolve(dirname(file), parsed.sourceRoot ?? '', source);
      if (!existsSync(target)) missing.push(`${file} -> ${source}`);
    }
  }
  return { maps: maps.length, missing };
}
