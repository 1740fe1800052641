import { describe, expect, test } from 'vitest';
import { hashTagOf, KeyNames, type LockKeys } from '../src/key-names.js';
import { slotOf as crc16Slot } from '../src/slot-tag.js';

// Redis Cluster refuses a script whose keys are in different hash slots (CROSSSLOT), so every key
// of one lock must hash as its lock key does; and no two locks may share a companion key.

/** The slot Redis Cluster puts a key in: its hash tag's, or the whole key's without one. */
function slotOf(redisKey: string): number {
  return crc16Slot(hashTagOf(redisKey) ?? redisKey);
}

const companions = (keys: LockKeys): string[] => [
  keys.fence,
  keys.holder,
  keys.slots,
  keys.queue,
  keys.queueExpiries,
  keys.rwLine,
  keys.rwLineInfo,
];

// Keys with braces in every position Redis' rule cares about that can share a slot: none, a tag,
// an open brace never closed, a tag spanning the whole key, two tags.
const awkward = ['orders', 'a{b', '{x}', 'x', '{x}/y', 'a{b}c{d}', 'ü{ñ}', '{a{b}', 'p/{q}/r'];
/** Hashed whole although they contain a "}" (no tag, or an empty one first): no tag can spell them. */
const unmatched = ['a}b', 'x}', 'a{}b', '{}', '{}{x}'];

describe('key names', () => {
  test('CRC16 matches the slots Redis documents', () => {
    expect(slotOf('123456789')).toBe(0x31c3 % 16384);
    expect(slotOf('{user1000}.following')).toBe(slotOf('user1000'));
  });

  test.each(['holdfast:', '', '{app}:', 'app{:'])('every key of a lock hashes to its lock key\'s slot (prefix "%s")', (prefix) => {
    const names = new KeyNames(prefix, 0);
    for (const key of [...awkward, ...unmatched]) {
      const keys = names.of(key);
      for (const companion of companions(keys)) expect(slotOf(companion), `${companion} of ${keys.lock}`).toBe(slotOf(keys.lock));
    }
  });

  test('no two locks (prefixes and keys alike) share a name, and no companion is a lock key', () => {
    const seen = new Map<string, string>();
    const locks = new Set<string>();
    for (const prefix of ['holdfast:', '', '{', '{app}:']) {
      const names = new KeyNames(prefix, 0);
      for (const key of [...awkward, ...unmatched]) {
        const keys = names.of(key);
        locks.add(keys.lock);
        for (const companion of companions(keys)) {
          expect(seen.get(companion) ?? keys.lock, companion).toBe(keys.lock);
          seen.set(companion, keys.lock);
          expect(names.keyOf(companion), companion).toBeUndefined();
        }
      }
    }
    for (const lock of locks) expect(seen.has(lock), lock).toBe(false);
  });

  test('a lock key with a "}" and no tag before it gets companions tagged with a text found to hash to its slot', () => {
    const keys = new KeyNames('holdfast:', 0).of('a}b');
    expect(keys.fence).toMatch(/^\{slot:[0-9a-z]+\}\/\/holdfast:a\}b\/\/fence$/);
    expect(slotOf(keys.fence)).toBe(slotOf(keys.lock));
  });

  test('the legacy fence is passed only where versions up to 0.1 may have run', () => {
    expect(new KeyNames('holdfast:', 0).of('k').legacyFence).toEqual(['holdfast:k//holdfast']);
    expect(new KeyNames('holdfast:', 0, false).of('k').legacyFence).toEqual([]);
  });
});
