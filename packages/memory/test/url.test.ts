import { createLockProvider, ErrorCode } from '@holdfast/core';
import { expect, test } from 'vitest';
import { createMemoryProvider, MemoryStore } from '../src/index.js';

test('memory: URLs share a store per name, so instances see each other', async () => {
  const a = await createLockProvider('memory://url-test');
  const b = await createLockProvider('memory://url-test');
  const elsewhere = await createLockProvider('memory://another-store');
  try {
    expect(await a.tryAcquire('shared')).not.toBeNull();
    expect(await b.tryAcquire('shared')).toBeNull();
    expect(await elsewhere.tryAcquire('shared')).not.toBeNull();
  } finally {
    await Promise.all([a.close(), b.close(), elsewhere.close()]);
  }
});

test.each([
  ['ftp://example.com', ErrorCode.InvalidArgument],
  ['not a url', ErrorCode.InvalidArgument],
])('createLockProvider(%j) fails with %s', async (url, code) => {
  await expect(createLockProvider(url)).rejects.toMatchObject({ code });
});

test('options the memory backend does not have are rejected, not ignored', async () => {
  await expect(createLockProvider('memory:', { adapter: { prefix: 'x' } })).rejects.toMatchObject({ code: ErrorCode.InvalidArgument });
  await expect(createLockProvider('memory:?prefix=x')).rejects.toMatchObject({ code: ErrorCode.InvalidArgument });
});

test('createMemoryProvider: an unknown option is rejected; the provider-level ones are honoured', async () => {
  expect(() => createMemoryProvider({ pollIntervalMs: 10 } as never)).toThrow(
    expect.objectContaining({ code: ErrorCode.InvalidArgument, message: expect.stringMatching(/not a memory option/) }),
  );
  const logger = { warn: () => undefined };
  const provider = createMemoryProvider({
    store: new MemoryStore(),
    owner: 'me',
    callTimeoutMs: 100,
    closeTimeoutMs: 100,
    ttlBelowMinimum: 'reject',
    logger,
  });
  try {
    expect(provider.owner).toBe('me');
    await expect(provider.tryAcquire('k', { ttlMs: 1 })).rejects.toMatchObject({ code: ErrorCode.InvalidArgument });
  } finally {
    await provider.close();
  }
});

test('provider-level options reach the provider: a bad callTimeoutMs is rejected', async () => {
  await expect(createLockProvider('memory:', { callTimeoutMs: -1 })).rejects.toMatchObject({ code: ErrorCode.InvalidArgument });
});

test('memory: stores are one per process, shared with another copy of this package (ESM and CommonJS loaded together)', async () => {
  const { createRequire } = await import('node:module');
  const required = createRequire(import.meta.url)('@holdfast/memory') as typeof import('@holdfast/memory');
  const esm = await import('@holdfast/memory');
  expect(required.sharedStore, 'the CommonJS build was not loaded as a separate copy').not.toBe(esm.sharedStore);
  expect(required.sharedStore('dual')).toBe(esm.sharedStore('dual'));
});
