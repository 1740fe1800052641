import { parseArgs } from 'node:util';
import { backendUrl, openProvider } from './backends.js';
import { describeLock, lockInfoJson } from './lock-info-format.js';
import { parsingFlags } from './options.js';
import { UsageError } from './usage.js';

/** `holdfast inspect <key>`: who holds it, why, since when, until when, with which token. */
export async function inspect(args: string[]): Promise<number> {
  const { values, positionals } = parsingFlags(() =>
    parseArgs({ args, allowPositionals: true, strict: true, options: { backend: { type: 'string' }, json: { type: 'boolean' } } }),
  );
  const [key, ...extra] = positionals;
  if (!key || extra.length > 0) throw new UsageError('inspect takes exactly one key');
  const provider = await openProvider(backendUrl(values.backend));
  try {
    const info = await provider.inspect(key);
    console.log(values.json ? JSON.stringify(info && lockInfoJson(info), null, 2) : describeLock(key, info));
    return 0;
  } finally {
    await provider.close();
  }
}
