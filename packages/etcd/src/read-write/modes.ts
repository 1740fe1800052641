import type { LockMode } from '@holdfast/core/backend';
import { decodeEntry, type EntryValue } from '../entry.js';
import type { KeyValue } from '../kv.js';

/**
 * A read-write contender is an entry of the key's own directory whose name says its mode, as
 * rwmutex.go's "read"/"write" key prefixes do: "read-<lease>-<suffix>" or "write-<lease>-<suffix>".
 * Kept in the directory (not in "read/" and "write/" below it, as Go nests them) so that it is a
 * direct entry like the mutex's: `etcdctl lock` and Holdfast's plain locks and semaphores of the key
 * see it in line, and a key "k/read" never shares a directory with the read-write lock "k".
 */
export const MODE_NAME_PREFIX: Readonly<Record<LockMode, string>> = Object.freeze({ shared: 'read-', exclusive: 'write-' });

/** The last segment of an entry's key: its name inside the key's directory. */
function nameOf(kv: KeyValue): string {
  const text = kv.key.toString();
  return text.slice(text.lastIndexOf('/') + 1);
}

/** The mode of a read-write contender's entry, or undefined for a lock's, a slot's or etcdctl's. */
export function modeOf(kv: KeyValue): LockMode | undefined {
  const name = nameOf(kv);
  if (name.startsWith(MODE_NAME_PREFIX.shared)) return 'shared';
  if (name.startsWith(MODE_NAME_PREFIX.exclusive)) return 'exclusive';
  return undefined;
}

/**
 * How a Holdfast entry uses its key, for the conflict message; undefined for a read-write entry and
 * for another client's (etcdctl's), which a read-write contender waits for as for a writer.
 */
export function otherUseOf(kv: KeyValue): string | undefined {
  if (modeOf(kv) !== undefined) return undefined;
  const value: EntryValue | null = decodeEntry(kv);
  if (value === null) return undefined;
  return value.limit === undefined ? 'the key is a plain lock' : `the key is a semaphore of ${value.limit} slots`;
}
