/** An `_id` condition: keys from `$gte`, below `$lt` when there is an upper bound. */
export interface KeyRange {
  readonly $gte: string;
  readonly $lt?: string;
}

/**
 * The `_id` range holding exactly the keys that start with `prefix`: [prefix, prefix with its last
 * code point raised by one). Keys are well-formed strings (core refuses lone surrogates) and both
 * mongod and FerretDB compare strings by their UTF-8 bytes, whose order is code point order.
 * Null for '' (every key).
 */
export function prefixRange(prefix: string): KeyRange | null {
  if (prefix === '') return null;
  const points = [...prefix];
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last === 0x10ffff) continue;
    // No string contains a surrogate code point: after U+D7FF comes U+E000.
    const next = last === 0xd7ff ? 0xe000 : last + 1;
    return { $gte: prefix, $lt: points.join('') + String.fromCodePoint(next) };
  }
  return { $gte: prefix };
}
