import type { LockInfo } from '@holdfast/core';
import type { Row } from './sql-runner.js';

/** A lock row as the statements select it: key as bytes, numbers as text (see statements.ts). */
export function lockInfo(row: Row): LockInfo {
  return {
    key: text(row['key']),
    owner: text(row['owner']),
    reason: row['reason'] === null ? undefined : text(row['reason']),
    token: BigInt(text(row['token'])),
    acquiredAt: new Date(Number(row['acquired_ms'])),
    expiresAt: new Date(Number(row['expires_ms'])),
  };
}

/** VARBINARY comes back as a Buffer, text as a string (or a Buffer, with some pool settings). */
export function text(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

/** JavaScript's string order (UTF-16 code units), which list() promises; the index orders by UTF-8 bytes. */
export function byKey(a: LockInfo, b: LockInfo): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
