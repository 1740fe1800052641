import { parseArgs } from 'node:util';
import { backendUrl, openProvider } from './backends.js';
import { parsingFlags } from './options.js';
import { EXIT, UsageError } from './usage.js';

/** `holdfast release --force <key>`: the operator's way to free a key whoever holds it. */
export async function release(args: string[]): Promise<number> {
  const { values, positionals } = parsingFlags(() =>
    parseArgs({ args, allowPositionals: true, strict: true, options: { backend: { type: 'string' }, force: { type: 'boolean' } } }),
  );
  const [key, ...extra] = positionals;
  if (!key || extra.length > 0) throw new UsageError('release takes exactly one key');
  if (!values.force) throw new UsageError('release frees a lock whoever holds it: say --force to confirm');
  const provider = await openProvider(backendUrl(values.backend));
  try {
    const freed = await provider.forceRelease(key);
    console.log(freed ? `${key}: released (its holder is told it lost the lock)` : `${key}: was not held`);
    return EXIT.ok;
  } finally {
    await provider.close();
  }
}
