import { createHash } from 'node:crypto';
import { MAX_SEMAPHORE_LIMIT } from '@holdfast/core';

/**
 * The 64-bit advisory lock id of a key in session mode: the first 8 bytes of
 * SHA-256("holdfast\0<table>\0<key>") as a signed bigint. The table name keeps lock spaces apart;
 * 64 bits make a collision with another key (or another app's small advisory ids) negligible, and
 * one would only make two keys exclude each other, never let two holders share one.
 */
export function advisoryKey(table: string, key: string): bigint {
  return createHash('sha256').update(`holdfast\u0000${table}\u0000${key}`).digest().readBigInt64BE(0);
}

const MAX_ID = (1n << 63n) - 1n;

/**
 * The base id of a key's semaphore slots in session mode: slot i is the advisory lock base + i, for
 * any limit (so every limit's slot i is the same lock). Hashed apart from the key's own id (plain
 * and read-write use); kept low enough that base + MAX_SEMAPHORE_LIMIT stays a bigint.
 */
export function semaphoreBase(table: string, key: string): bigint {
  const base = advisoryKey(table, `${key}\u0000semaphore`);
  return base > MAX_ID - BigInt(MAX_SEMAPHORE_LIMIT) ? base - BigInt(MAX_SEMAPHORE_LIMIT) : base;
}
