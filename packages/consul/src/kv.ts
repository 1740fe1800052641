import { BLOCKING_WAIT_MS, LOCK_FLAG } from './constants.js';
import { type ConsulHttp, ConsulHttpError, parseFlagSafe, stringifyFlagSafe } from './consul-http.js';

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

export function encodePath(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}

export async function readKey(http: ConsulHttp, key: string, consistent = false, signal?: AbortSignal): Promise<KvRead> {
  const response = await http.call('GET', `/v1/kv/${encodePath(key)}`, { consistent }, { accept: [200, 404], signal });
  if (response.status === 404) return { entry: null, index: response.index };
  const [entry] = parseFlagSafe<KvEntry[]>(response.body);
  return { entry: entry ?? null, index: response.index };
}

/** Blocking read of every key under `prefix` (consistent, like the Go monitor). */
export async function readPrefixBlocking(
  http: ConsulHttp,
  prefix: string,
  index: bigint,
  signal: AbortSignal | undefined,
  waitMs = BLOCKING_WAIT_MS,
): Promise<{ entries: KvEntry[]; index: bigint }> {
  const blocking = index > 0n;
  const response = await http.call(
    'GET',
    `/v1/kv/${encodePath(prefix)}`,
    { recurse: true, consistent: true, index: blocking ? index.toString() : undefined, wait: blocking ? `${Math.max(1, Math.ceil(waitMs))}ms` : undefined },
    { signal, blockingMs: waitMs, accept: [200, 404] },
  );
  const entries = response.status === 404 ? [] : parseFlagSafe<KvEntry[]>(response.body);
  return { entries, index: response.index };
}

export function isLockEntry(entry: KvEntry): boolean {
  return entry.Flags === LOCK_FLAG;
}

export function decodeValue(entry: KvEntry): string {
  return entry.Value === null ? '' : Buffer.from(entry.Value, 'base64').toString('utf8');
}

export type TxnKvOp =
  | { Verb: 'lock' | 'unlock'; Key: string; Session: string; Flags?: string; Value?: string }
  | { Verb: 'check-index'; Key: string; Index: number }
  | { Verb: 'check-not-exists' | 'delete' | 'get'; Key: string }
  | { Verb: 'check-session'; Key: string; Session: string }
  | { Verb: 'delete-cas'; Key: string; Index: number };

export type TxnResult = { ok: true; entries: KvEntry[] } | { ok: false; errors: string[] };

/**
 * An atomic Consul transaction of KV operations. 409 = rolled back (a check or lock failed, or a
 * lock-delay is in force): returned, not thrown.
 */
export async function transact(http: ConsulHttp, ops: readonly TxnKvOp[], signal?: AbortSignal): Promise<TxnResult> {
  const body = stringifyFlagSafe(ops.map((op) => ({ KV: op })));
  const response = await http.call('PUT', '/v1/txn', {}, { body, accept: [200, 409], signal });
  const parsed = parseFlagSafe<{ Results: { KV: KvEntry }[] | null; Errors: { What: string }[] | null }>(response.body);
  if (response.status === 409) return { ok: false, errors: (parsed.Errors ?? []).map((error) => error.What) };
  return { ok: true, entries: (parsed.Results ?? []).map((result) => result.KV) };
}

export function lockDelayRefusal(result: TxnResult): boolean {
  return !result.ok && result.errors.some((error) => /lock.delay/i.test(error));
}

export function invalidSessionRefusal(result: TxnResult): boolean {
  return !result.ok && result.errors.some((error) => /invalid session|session .*(not found|invalid)/i.test(error));
}

export { ConsulHttpError };
