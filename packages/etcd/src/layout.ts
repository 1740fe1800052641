import type { KeyValue } from './kv.js';

/**
 * Where a key's contenders live, as etcd's concurrency.Mutex lays them out: lock "<name>" of prefix
 * "<prefix>" is the directory "<prefix>/<name>/", and each contender is one entry in it,
 * "<lease-hex>-<suffix>", attached to its session's lease. `etcdctl lock <prefix>/<name>` writes
 * "<prefix>/<name>/<lease-hex>" into the same directory, so both see each other's holders.
 */
export class Layout {
  constructor(readonly prefix: string) {}

  dir(key: string): Buffer {
    return Buffer.from(`${this.prefix}/${key}/`);
  }

  /**
   * The suffix makes two attempts of one session on one key two contenders (Go's reuses one); a
   * read-write contender's name starts with its mode ("read-", "write-": read-write/modes.ts).
   */
  entry(key: string, leaseHex: string, suffix: string, namePrefix = ''): Buffer {
    return Buffer.from(`${this.prefix}/${key}/${namePrefix}${leaseHex}-${suffix}`);
  }

  /** Everything under the prefix whose user key starts with `keyPrefix`. */
  listStart(keyPrefix: string): Buffer {
    return Buffer.from(`${this.prefix}/${keyPrefix}`);
  }

  /** The user key of an entry, or null for something that is not a contender entry under the prefix. */
  keyOf(entryKey: Buffer): string | null {
    const text = entryKey.toString();
    const head = `${this.prefix}/`;
    const slash = text.lastIndexOf('/');
    if (!text.startsWith(head) || slash < head.length + 1) return null;
    return text.slice(head.length, slash);
  }
}

/**
 * The entries of `dir` itself, oldest first: not those of a longer key below it ("a/b" lives in
 * "a/"'s range too), which a range over the directory also returns.
 */
export function directEntries(dir: Buffer, kvs: readonly KeyValue[]): KeyValue[] {
  return kvs.filter((kv) => kv.key.indexOf(0x2f, dir.length) === -1);
}

/** The lease of an entry as etcd shows it, in hex like the entry names (0 = none). */
export function leaseHex(lease: string): string {
  return BigInt(lease).toString(16);
}
