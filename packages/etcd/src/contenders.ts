import type { EtcdContext } from './context.js';
import { type KeyValue, prefixEnd, type RangeRequest, type RangeResponse, range } from './kv.js';
import { directEntries } from './layout.js';

/** Entries of longer keys below a directory that one read may have to skip ("a/" holds "a/b/..."). */
export const NESTED_SLACK = 8;

/** A range of the directory's entries, oldest first (etcd's WithFirstCreate), `limit` of them. */
export function oldestFirst(dir: Buffer, limit: number): RangeRequest {
  return { key: dir, range_end: prefixEnd(dir), sort_order: 'ASCEND', sort_target: 'CREATE', limit };
}

/**
 * The `count` oldest contenders of the directory, from a first read (made inside a transaction)
 * and, only when entries of nested keys crowded it, further reads after the last one seen.
 */
export async function oldestContenders(
  ctx: EtcdContext,
  dir: Buffer,
  first: RangeResponse,
  count: number,
  signal: AbortSignal,
): Promise<KeyValue[]> {
  const found = directEntries(dir, first.kvs);
  let page = first;
  while (found.length < count && page.more && page.kvs.length > 0) {
    const last = page.kvs[page.kvs.length - 1]!;
    page = await range(
      ctx.rpc,
      { ...oldestFirst(dir, count + NESTED_SLACK), min_create_revision: String(BigInt(last.create_revision) + 1n) },
      signal,
    );
    found.push(...directEntries(dir, page.kvs));
  }
  return found.slice(0, count);
}

/** A part of a key's directory, by entry name: [key, rangeEnd). */
export interface Span {
  readonly key: Buffer;
  readonly rangeEnd: Buffer;
}

/**
 * The contender just before `createRevision` (etcd's waitDeletes: WithLastCreate, WithMaxCreateRev),
 * among the whole directory or among the entries of `span` (a read-write reader's: the non-readers).
 */
export async function predecessorOf(
  ctx: EtcdContext,
  dir: Buffer,
  createRevision: string,
  signal: AbortSignal,
  span: Span = { key: dir, rangeEnd: prefixEnd(dir) },
): Promise<KeyValue | null> {
  let below = BigInt(createRevision) - 1n;
  for (;;) {
    const page = await range(
      ctx.rpc,
      {
        key: span.key,
        range_end: span.rangeEnd,
        sort_order: 'DESCEND',
        sort_target: 'CREATE',
        limit: NESTED_SLACK,
        max_create_revision: String(below),
      },
      signal,
    );
    const direct = directEntries(dir, page.kvs);
    if (direct.length > 0) return direct[0]!;
    if (!page.more || page.kvs.length === 0) return null;
    below = BigInt(page.kvs[page.kvs.length - 1]!.create_revision) - 1n;
  }
}
