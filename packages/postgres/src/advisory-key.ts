import { createHash } from 'node:crypto';

/**
 * The 64-bit advisory lock id of a key in session mode: the first 8 bytes of
 * SHA-256("holdfast\0<table>\0<key>") as a signed bigint. The table name keeps lock spaces apart;
 * 64 bits make a collision with another key (or another app's small advisory ids) negligible, and
 * one would only make two keys exclude each other, never let two holders share one.
 */
export function advisoryKey(table: string, key: string): bigint {
  return createHash('sha256').update(`holdfast\u0000${table}\u0000${key}`).digest().readBigInt64BE(0);
}
