import { ErrorCode } from '@holdfast/core';
import { expect, test } from 'vitest';
import { createMemoryProvider } from '../src/index.js';

// A proof carries no mode: a handed-off read-write grant could never be resumed, and the key would
// stay held by nobody until its lease ended. handOff() must refuse before it lets go.
test('handOff() and toJSON() of a read-write grant refuse, and the handle keeps holding', async () => {
  const provider = createMemoryProvider();
  try {
    const writer = await provider.readWrite('k').write({ waitMs: 0 });
    expect(() => writer.handOff()).toThrow(expect.objectContaining({ code: ErrorCode.Unsupported }));
    expect(() => writer.toJSON()).toThrow(expect.objectContaining({ code: ErrorCode.Unsupported }));
    expect(writer.signal.aborted, 'a refused hand-off let go of the lock').toBe(false);
    expect(await writer.isHeld()).toBe(true);
    await writer.release();
    const plain = await provider.acquire('plain', { waitMs: 0 });
    expect(plain.toJSON().key, 'a plain lock still gives its proof').toBe('plain');
    await plain.release();
  } finally {
    await provider.close();
  }
});
