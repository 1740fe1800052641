import { parseArgs } from 'node:util';
import { backendUrl, openProvider } from './backends.js';
import { lockInfoJson, lockTable } from './lock-info-format.js';
import { parsingFlags } from './options.js';
import { UsageError } from './usage.js';

/** `holdfast list [prefix]`: every held lock (whose key starts with prefix), with holder, token and expiry. */
export async function list(args: string[]): Promise<number> {
  const { values, positionals } = parsingFlags(() =>
    parseArgs({ args, allowPositionals: true, strict: true, options: { backend: { type: 'string' }, json: { type: 'boolean' } } }),
  );
  if (positionals.length > 1) throw new UsageError('list takes at most one prefix');
  const provider = await openProvider(backendUrl(values.backend));
  try {
    const infos = await provider.list({ prefix: positionals[0] ?? '' });
    console.log(values.json ? JSON.stringify(infos.map(lockInfoJson), null, 2) : lockTable(infos));
    return 0;
  } finally {
    await provider.close();
  }
}
