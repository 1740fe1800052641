import { parseArgs } from 'node:util';
import type { LockInfo } from '@holdfast/core';
import { backendUrl, openProvider } from './backends.js';
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
    console.log(values.json ? JSON.stringify(info && toJson(info), null, 2) : describe(key, info));
    return 0;
  } finally {
    await provider.close();
  }
}

function toJson(info: LockInfo): Record<string, unknown> {
  return { ...info, token: info.token.toString(), acquiredAt: info.acquiredAt.toISOString(), expiresAt: info.expiresAt?.toISOString() ?? null };
}

function describe(key: string, info: LockInfo | null): string {
  if (!info) return `${key}: free`;
  const lines = [
    `${key}: held`,
    `  holder   ${info.owner}`,
    `  reason   ${info.reason ?? '-'}`,
    `  since    ${info.acquiredAt.toISOString()}`,
    `  expires  ${info.expiresAt?.toISOString() ?? '- (kept alive by the holder)'}`,
    `  token    ${info.token}`,
  ];
  for (const [name, value] of Object.entries(info.details ?? {})) lines.push(`  ${name.padEnd(8)} ${JSON.stringify(value)}`);
  return lines.join('\n');
}
