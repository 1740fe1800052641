import { afterEach, describe, expect, test } from 'vitest';
import { createProvider } from '../src/backend-index.js';
import {
  createLockProvider,
  HoldfastError,
  InvalidArgumentError,
  isHoldfastError,
  LockTimeoutError,
  redactUrl,
  registerAdapter,
  validateKey,
  withLock,
} from '../src/index.js';
import { ScriptedBackend } from './fixtures/scripted-backend.js';

const savedUrl = process.env.HOLDFAST_URL;
afterEach(() => {
  if (savedUrl === undefined) delete process.env.HOLDFAST_URL;
  else process.env.HOLDFAST_URL = savedUrl;
});

describe('no silent in-process fallback', () => {
  test('createLockProvider() without a URL and without HOLDFAST_URL is an InvalidArgumentError saying how to configure it', async () => {
    delete process.env.HOLDFAST_URL;
    const error = await createLockProvider().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(String((error as Error).message)).toMatch(/HOLDFAST_URL/);
    expect(String((error as Error).message)).toMatch(/memory:/);
  });

  test('an empty HOLDFAST_URL counts as missing', async () => {
    process.env.HOLDFAST_URL = '';
    await expect(createLockProvider()).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});

describe('adapters passed explicitly', () => {
  test('options.adapters builds the provider without importing a package (bundled apps)', async () => {
    const backend = new ScriptedBackend();
    const provider = await createLockProvider('scripted://x', {
      adapters: { 'scripted:': { createProviderFromUrl: () => createProvider(backend) } },
    });
    expect(provider.backend).toBe('scripted');
    await provider.close();
  });

  test('registerAdapter() makes a new scheme known', async () => {
    registerAdapter('scripted2', { createProviderFromUrl: () => createProvider(new ScriptedBackend()) });
    const provider = await createLockProvider('scripted2:');
    expect(provider.backend).toBe('scripted');
    await provider.close();
  });
});

describe('option names', () => {
  test('an unknown top-level option of createLockProvider is rejected, pointing at options.adapter', async () => {
    const error = await createLockProvider('memory:', { prefix: 'x' } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(String((error as Error).message)).toMatch(/options\.adapter/);
  });
});

describe('one adapter registry per process', () => {
  test('an adapter registered through the CommonJS copy of core is seen by the ESM copy', async () => {
    const { createRequire } = await import('node:module');
    const cjs = createRequire(import.meta.url)('@holdfast/core') as typeof import('../src/index.js');
    expect(cjs.createLockProvider, 'the CommonJS build was not loaded as a separate copy').not.toBe(createLockProvider);
    cjs.registerAdapter('dualcopy', { createProviderFromUrl: () => createProvider(new ScriptedBackend()) });
    const provider = await createLockProvider('dualcopy:');
    expect(provider.backend).toBe('scripted');
    await provider.close();
  });
});

describe('input checks', () => {
  test.each([
    ['NEXT LINE U+0085', 'a\u0085b'],
    ['C1 U+0080', '\u0080'],
    ['C1 U+009F', 'x\u009f'],
    ['DEL', 'a\u007f'],
    ['a lone surrogate', 'a\ud800b'],
  ])('a key with %s is rejected', (_, key) => {
    expect(() => validateKey(key)).toThrow(InvalidArgumentError);
  });

  test('U+00A0 (not a control character) is a valid key character', () => {
    expect(() => validateKey('a\u00a0b')).not.toThrow();
  });

  test.each([
    ['callTimeoutMs', { callTimeoutMs: 0 }],
    ['closeTimeoutMs', { closeTimeoutMs: -1 }],
    ['pollIntervalMs', { pollIntervalMs: Number.NaN }],
  ])('a bad %s is an InvalidArgumentError', (_, options) => {
    expect(() => createProvider(new ScriptedBackend(), options)).toThrow(InvalidArgumentError);
  });

  test('URLs in messages have their password and query values redacted', () => {
    expect(redactUrl('redis://user:secret@host:6379/0?token=abc&x=1')).toBe('redis://user:***@host:6379/0?token=***&x=***');
  });
});

describe('one TTL rule on every backend', () => {
  test("a ttlMs below the backend's minimum is raised to it by default, and expiresAt shows the real lease", async () => {
    const backend = new ScriptedBackend();
    const provider = createProvider(backend);
    const before = Date.now();
    const lock = await provider.acquire('k', { ttlMs: 1 });
    expect(lock.expiresAt!.getTime()).toBeGreaterThanOrEqual(before + backend.capabilities.minTtlMs);
    await provider.close();
  });

  test("with ttlBelowMinimum: 'reject' a ttlMs below the minimum is an InvalidArgumentError", async () => {
    const provider = createProvider(new ScriptedBackend(), { ttlBelowMinimum: 'reject' });
    await expect(provider.acquire('k', { ttlMs: 1 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await provider.close();
  });

  test('a ttlMs above the maximum is rejected under either rule', async () => {
    const provider = createProvider(new ScriptedBackend());
    await expect(provider.acquire('k', { ttlMs: 10 ** 12 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(provider.acquire('k', { ttlMs: 0 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await provider.close();
  });
});

describe('errors across copies of core', () => {
  test('an error branded by another copy of core is recognised by instanceof and isHoldfastError', () => {
    const foreign = Object.assign(new Error('timed out'), { name: 'LockTimeoutError', code: 'HOLDFAST_TIMEOUT' });
    Object.defineProperty(foreign, Symbol.for('holdfast.error'), { value: true });
    expect(foreign).toBeInstanceOf(LockTimeoutError);
    expect(foreign).toBeInstanceOf(HoldfastError);
    expect(foreign).not.toBeInstanceOf(InvalidArgumentError);
    expect(isHoldfastError(foreign, 'HOLDFAST_TIMEOUT')).toBe(true);
    expect(new Error('plain')).not.toBeInstanceOf(HoldfastError);
  });
});

describe('withLock', () => {
  test("fn's result survives a release that fails; the failure is reported through the lock's signal", async () => {
    const backend = new ScriptedBackend();
    const provider = createProvider(backend, { callTimeoutMs: 200 });
    let signal: AbortSignal | undefined;
    const result = await withLock(provider, 'k', (s) => {
      signal = s;
      backend.behaviour.release = 'fail';
      return 42;
    });
    expect(result).toBe(42);
    expect(String((signal!.reason as Error).message)).toMatch(/release was not confirmed/);
    backend.behaviour.release = 'normal';
    await provider.close();
  });

  test("fn's own error stays the outcome when the release fails too", async () => {
    const backend = new ScriptedBackend();
    const provider = createProvider(backend, { callTimeoutMs: 200 });
    const failure = new Error('work failed');
    const outcome = await withLock(provider, 'k', () => {
      backend.behaviour.release = 'fail';
      throw failure;
    }).catch((e: unknown) => e);
    expect(outcome).toBe(failure);
    backend.behaviour.release = 'normal';
    await provider.close();
  });
});

describe('checkOptionNames (for adapters)', () => {
  test('an old name is refused with its new name; an unknown one lists the known names', async () => {
    const { checkOptionNames } = await import('../src/backend-index.js');
    const names = { backend: 'Example', known: ['url', 'pollIntervalMs'], renamed: { safetyPollMs: 'pollIntervalMs' }, where: 'adapter.' };
    expect(() => checkOptionNames(['url'], names)).not.toThrow();
    expect(() => checkOptionNames(['safetyPollMs'], names)).toThrow(/safetyPollMs was renamed pollIntervalMs/);
    expect(() => checkOptionNames(['prefix'], names)).toThrow(/not a Example option; expected one of url, pollIntervalMs/);
    expect(() => checkOptionNames(['prefix'], names)).toThrow(InvalidArgumentError);
  });
});
