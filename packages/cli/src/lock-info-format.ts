import type { LockInfo } from '@holdfast/core';

/** A LockInfo as JSON: dates as ISO strings, the token as a decimal string (JSON has no bigint). */
export function lockInfoJson(info: LockInfo): Record<string, unknown> {
  return {
    ...info,
    token: info.token.toString(),
    acquiredAt: info.acquiredAt.toISOString(),
    expiresAt: info.expiresAt?.toISOString() ?? null,
  };
}

/** `inspect`'s block for one key: holder, reason, since, expiry, token and the backend's details. */
export function describeLock(key: string, info: LockInfo | null): string {
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

/** `list`'s table: one line per held key. */
export function lockTable(infos: readonly LockInfo[]): string {
  if (infos.length === 0) return '(no locks held)';
  const rows = infos.map((info) => [info.key, info.owner, String(info.token), info.expiresAt?.toISOString() ?? '-', info.reason ?? '-']);
  const header = ['KEY', 'HOLDER', 'TOKEN', 'EXPIRES', 'REASON'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]): string =>
    cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}
