import type { EtcdRpc } from './rpc.js';

/** A key-value as etcd returns it (int64 fields as decimal strings). */
export interface KeyValue {
  readonly key: Buffer;
  readonly create_revision: string;
  readonly mod_revision: string;
  readonly value: Buffer;
  readonly lease: string;
}

export interface ResponseHeader {
  readonly revision: string;
}

export interface RangeResponse {
  readonly header: ResponseHeader;
  readonly kvs: KeyValue[];
  readonly more: boolean;
}

interface ResponseOp {
  readonly response_range?: RangeResponse;
  readonly response_delete_range?: { readonly deleted: string };
}

export interface TxnResponse {
  readonly header: ResponseHeader;
  readonly succeeded: boolean;
  readonly responses: ResponseOp[];
}

export type RequestOp =
  | { request_range: RangeRequest }
  | { request_put: { key: Buffer; value: Buffer; lease: string } }
  | { request_delete_range: { key: Buffer; range_end?: Buffer } };

export interface RangeRequest {
  key: Buffer;
  range_end?: Buffer;
  limit?: number;
  sort_order?: 'NONE' | 'ASCEND' | 'DESCEND';
  sort_target?: 'KEY' | 'CREATE' | 'MOD';
  keys_only?: boolean;
  min_create_revision?: string;
  max_create_revision?: string;
}

export interface Compare {
  key: Buffer;
  target: 'CREATE' | 'MOD' | 'VALUE';
  result: 'EQUAL';
  create_revision?: string;
  mod_revision?: string;
  value?: Buffer;
}

/** The end of the range of every key that starts with `prefix` (etcd's GetPrefixRangeEnd). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  // All 0xff (or empty): to the end of the keyspace.
  return Buffer.from([0]);
}

export function range(rpc: EtcdRpc, request: RangeRequest, signal: AbortSignal): Promise<RangeResponse> {
  return rpc.unary<RangeResponse>(rpc.kv, 'Range', request, signal);
}

export function txn(
  rpc: EtcdRpc,
  compare: Compare[],
  success: RequestOp[],
  failure: RequestOp[],
  signal: AbortSignal,
): Promise<TxnResponse> {
  return rpc.unary<TxnResponse>(rpc.kv, 'Txn', { compare, success, failure }, signal);
}

/** Deletes `key` if its create revision is still `createRevision` (the grant's own, not a later holder's). */
export async function deleteIfCreatedAt(rpc: EtcdRpc, key: Buffer, createRevision: string, signal: AbortSignal): Promise<boolean> {
  const res = await txn(
    rpc,
    [{ key, target: 'CREATE', result: 'EQUAL', create_revision: createRevision }],
    [{ request_delete_range: { key } }],
    [],
    signal,
  );
  return res.succeeded && res.responses[0]?.response_delete_range?.deleted !== '0';
}

/** The n-th op's range answer (a txn's ops answer in order). */
export function rangeOf(res: TxnResponse, n: number): RangeResponse {
  const answer = res.responses[n]?.response_range;
  if (!answer) throw new Error(`etcd txn answer ${n} is not a range`);
  return answer;
}
