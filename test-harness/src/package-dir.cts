import fs = require('node:fs');
import path = require('node:path');

/**
 * The installed harness package's directory (the one holding scripts/ and dist/). A .cts file, so
 * both builds (dist/ and dist/cjs/) and vitest on src/ have __dirname; import.meta.url would not
 * compile in the CommonJS build.
 */
function harnessDir(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: string }).name === '@holdfast/test-harness') {
      return dir;
    }
    if (path.dirname(dir) === dir) throw new Error(`@holdfast/test-harness: no package.json of the harness above ${__dirname}`);
  }
}

export = { harnessDir };
