/**
 * How keys and contenders become znodes. Every key is one znode directly under the provider's root,
 * its name the key percent-encoded (so `a/b` is `a%2Fb`, and "." or ".." never make a segment): a
 * key's contenders are its children, and `list(prefix)` is one getChildren of the root, filtered by
 * the decoded names, whatever the prefix (a plain string prefix, not a path).
 *
 * A contender is `_c_<id>-<kind>-<sequence>`: Curator's protected-mode name, the id being the
 * acquire's own (its place in line, or the single attempt's lockId), so a node whose create answer
 * was lost is found again by its id. `<kind>` is `lock`, or `sem<limit>` for a semaphore slot.
 * A read-write contender is `_c_<id>-__READ__<sequence>` or `_c_<id>-__WRIT__<sequence>`, the names
 * of Curator's InterProcessReadWriteLock (no dash before the sequence), so each sees the other's.
 */

/** The znode name of a key: percent-encoded, with "." encoded too (ZooKeeper refuses "." and ".." segments). */
export function keyNode(key: string): string {
  return encodeURIComponent(key).replace(/\./g, '%2E').replace(/\*/g, '%2A');
}

/** The key a znode name stands for, or undefined for a name this provider did not write. */
export function keyOfNode(name: string): string | undefined {
  try {
    const key = decodeURIComponent(name);
    return keyNode(key) === name ? key : undefined;
  } catch {
    return undefined;
  }
}

/** `lock`, `sem<limit>` for a slot of a semaphore of that limit, or a read-write lock's `__READ__` / `__WRIT__`. */
export type ContenderKind = string;

export const LOCK_KIND: ContenderKind = 'lock';
export const slotKind = (limit: number): ContenderKind => `sem${limit}`;
/** Curator's lock names for a reader and a writer (both 8 characters, which its sorting relies on). */
export const READ_KIND: ContenderKind = '__READ__';
export const WRITE_KIND: ContenderKind = '__WRIT__';

export function isReadWriteKind(kind: ContenderKind): boolean {
  return kind === READ_KIND || kind === WRITE_KIND;
}

/** The name given to create(); ZooKeeper appends the 10-digit sequence. */
export function contenderPrefix(id: string, kind: ContenderKind): string {
  return isReadWriteKind(kind) ? `_c_${id}-${kind}` : `_c_${id}-${kind}-`;
}

/** A key's contender, as its name says. */
export interface Contender {
  readonly name: string;
  readonly id: string;
  readonly kind: ContenderKind;
  readonly sequence: number;
}

const CONTENDER = /^_c_(.+)-(?:(lock|sem\d+)-|(__READ__|__WRIT__))(\d{10})$/;

export function parseContender(name: string): Contender | undefined {
  const match = CONTENDER.exec(name);
  if (!match) return undefined;
  return { name, id: match[1]!, kind: (match[2] ?? match[3])!, sequence: Number(match[4]) };
}

/** A key's contenders in line order (smallest sequence first); names of others are ignored. */
export function lineOf(children: readonly string[]): Contender[] {
  return children
    .map(parseContender)
    .filter((c): c is Contender => c !== undefined)
    .sort((a, b) => a.sequence - b.sequence);
}

/** The limit of a semaphore kind, or 1 for a lock (a read-write lock's holders are counted by line.ts). */
export function limitOf(kind: ContenderKind): number {
  return kind === LOCK_KIND || isReadWriteKind(kind) ? 1 : Number(kind.slice(3));
}
