import { BackendError, LockConflictError } from '@holdfast/core';
import { BLOCKING_WAIT_MS, LOCK_FLAG } from './constants.js';
import { type ConsulHttp, parseFlagSafe, type Query, stringifyFlagSafe } from './consul-http.js';

/** A KV entry as Consul returns it, with Flags kept exact. */
export interface KvEntry {
  readonly Key: string;
  readonly Flags: string;
  readonly Value: string | null;
  readonly Session?: string;
  readonly LockIndex: number;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

export interface KvRead {
  readonly entry: KvEntry | null;
  /** X-Consul-Index of the answer. */
  readonly index: bigint;
}

/** Entries and the answer's X-Consul-Index. */
export interface KvSnapshot {
  readonly entries: KvEntry[];
  readonly index: bigint;
}

export interface ReadOptions {
  /** Every key under `key` (a prefix), not just `key`. */
  readonly recurse?: boolean;
  /** Linearizable: what the Go monitor uses. */
  readonly consistent?: boolean;
  /** A blocking query: answer once the index passes this one, or after `waitMs`. 0n: answer at once. */
  readonly index?: bigint;
  readonly waitMs?: number;
  readonly signal?: AbortSignal | undefined;
}

export function encodePath(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}

/** GET /v1/kv/<key>: one key, or every key under a prefix with `recurse`; a blocking query with `index`. */
export async function readEntries(http: ConsulHttp, key: string, options: ReadOptions = {}): Promise<KvSnapshot> {
  const blocking = options.index !== undefined && options.index > 0n;
  const waitMs = options.waitMs ?? BLOCKING_WAIT_MS;
  const query: Query = { recurse: options.recurse, consistent: options.consistent };
  if (blocking) Object.assign(query, { index: options.index!.toString(), wait: `${Math.max(1, Math.ceil(waitMs))}ms` });
  const response = await http.call('GET', `/v1/kv/${encodePath(key)}`, query, {
    signal: options.signal,
    blockingMs: blocking ? waitMs : undefined,
    accept: [200, 404],
  });
  const entries = response.status === 404 ? [] : parseFlagSafe<KvEntry[]>(response.body);
  return { entries, index: response.index };
}

export async function readKey(http: ConsulHttp, key: string, consistent = false, signal?: AbortSignal): Promise<KvRead> {
  const { entries, index } = await readEntries(http, key, { consistent, signal });
  return { entry: entries.find((entry) => entry.Key === key) ?? null, index };
}

export function isLockEntry(entry: KvEntry): boolean {
  return entry.Flags === LOCK_FLAG;
}

/** A key used otherwise than as a lock (other flags): Go's ErrLockConflict, named by the user's key. */
export function lockConflict(key: string, entry: KvEntry): LockConflictError {
  return new LockConflictError(key, `existing key does not match lock use (flags ${entry.Flags}, lock flag ${LOCK_FLAG})`);
}

export function decodeValue(entry: KvEntry): string {
  return entry.Value === null ? '' : Buffer.from(entry.Value, 'base64').toString('utf8');
}

export type TxnKvOp =
  | { Verb: 'lock' | 'unlock'; Key: string; Session: string; Flags?: string; Value?: string }
  | { Verb: 'cas'; Key: string; Index: number; Flags: string; Value: string }
  | { Verb: 'check-index' | 'delete-cas'; Key: string; Index: number }
  | { Verb: 'check-not-exists' | 'delete' | 'get-tree'; Key: string };

/** Why an operation of a rolled-back transaction failed; Consul reports every failing operation. */
export interface TxnError {
  readonly opIndex: number;
  readonly what: string;
}

export type TxnResult = { ok: true; entries: KvEntry[] } | { ok: false; errors: TxnError[] };

/**
 * An atomic Consul transaction of KV operations. 409 = rolled back (a check or lock failed, or a
 * lock-delay is in force): returned, not thrown.
 */
export async function transact(http: ConsulHttp, ops: readonly TxnKvOp[], signal?: AbortSignal): Promise<TxnResult> {
  const body = stringifyFlagSafe(ops.map((op) => ({ KV: op })));
  const response = await http.call('PUT', '/v1/txn', {}, { body, accept: [200, 409], signal });
  const parsed = parseFlagSafe<{ Results: { KV: KvEntry }[] | null; Errors: { OpIndex: number; What: string }[] | null }>(response.body);
  if (response.status === 409)
    return { ok: false, errors: (parsed.Errors ?? []).map((error) => ({ opIndex: error.OpIndex, what: error.What })) };
  return { ok: true, entries: (parsed.Results ?? []).map((result) => result.KV) };
}

/** The ModifyIndex a transaction's last write of `key` got: a lock's fencing token, with no read-after-write race. */
export function modifyIndexOf(entries: readonly KvEntry[], key: string): bigint {
  const written = entries.findLast((entry) => entry.Key === key);
  if (!written) throw new BackendError('consul', `the transaction returned no entry for "${key}"`);
  return BigInt(written.ModifyIndex);
}

export function lockDelayRefusal(result: TxnResult): boolean {
  return !result.ok && result.errors.some((error) => /lock.delay/i.test(error.what));
}

export function invalidSessionRefusal(result: TxnResult): boolean {
  return !result.ok && result.errors.some((error) => /invalid session|session .*(not found|invalid)/i.test(error.what));
}

/** Whether the operation at `opIndex` (or any of `count` operations from it) failed in a rolled-back transaction. */
export function failedAt(result: TxnResult, opIndex: number, count = 1): boolean {
  return !result.ok && result.errors.some((error) => error.opIndex >= opIndex && error.opIndex < opIndex + count);
}

/** Text of a KV value as a transaction or a PUT sends it. */
export function encodeValue(text: string): string {
  return Buffer.from(text).toString('base64');
}

/**
 * What Holdfast stores as the lock key's (or a slot's contender entry's) value, for inspect() and holders(). `consul lock` treats the value as
 * opaque bytes and only checks Flags, so this stays compatible; foreign holders' values are shown raw.
 */
export interface LockValue {
  readonly holdfast: 1;
  readonly owner: string;
  readonly reason?: string;
  readonly acquiredAt: string;
  readonly lockId: string;
  /** A semaphore slot moved to a new session (extend of a lapsing slot): its token, which its rewritten contender entry no longer shows. */
  readonly token?: string;
}

export function encodeLockValue(value: Omit<LockValue, 'holdfast'>): string {
  return Buffer.from(JSON.stringify({ holdfast: 1, ...value })).toString('base64');
}

export function decodeLockValue(text: string): LockValue | null {
  try {
    const parsed = JSON.parse(text) as Partial<LockValue>;
    return parsed?.holdfast === 1 && typeof parsed.owner === 'string' && typeof parsed.lockId === 'string' ? (parsed as LockValue) : null;
  } catch {
    return null;
  }
}

/** The lockId Holdfast wrote into the key's value, if it is a Holdfast value. */
export function lockIdOf(entry: KvEntry): string | undefined {
  return decodeLockValue(decodeValue(entry))?.lockId;
}
