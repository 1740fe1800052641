/**
 * Redis Cluster hashes a key to one of 16384 slots: CRC16 (XMODEM) of the key's hash tag, or of the
 * whole key without one. A lock key with a "}" and no tag before it (`a}b`) is hashed whole, and no
 * tag can spell it (a tag ends at its first "}"), so its companions are tagged with some short text
 * that lands in the same slot instead, found here once per slot.
 */
const SLOTS = 16384;
const found = new Map<number, string>();

export function slotOf(hashed: string): number {
  let crc = 0;
  for (const byte of Buffer.from(hashed, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % SLOTS;
}

/** A tag (no braces) that Redis Cluster hashes to `slot`; the same one every time, in every process. */
export function tagForSlot(slot: number): string {
  const known = found.get(slot);
  if (known !== undefined) return known;
  // About 16384 tries on average (well under a millisecond); every slot is reached within a few
  // hundred thousand numbers, so the loop ends.
  for (let n = 0; ; n++) {
    const tag = `slot:${n.toString(36)}`;
    if (slotOf(tag) === slot) {
      found.set(slot, tag);
      return tag;
    }
  }
}
