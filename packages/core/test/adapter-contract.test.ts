import { afterEach, describe, expect, test } from 'vitest';
import { busy, createProvider, type GrantOutcome, type LockBackend } from '../src/backend-index.js';
import { AdapterContractError, ErrorCode, isHoldfastError, LockLostError, type LockProvider } from '../src/index.js';
import { ScriptedBackend } from './fixtures/scripted-backend.js';
import { WakingBackend } from './fixtures/waking-backend.js';
import { GOOD_HOLDER, WrongAnswersBackend } from './fixtures/wrong-answers-backend.js';

const providers: LockProvider[] = [];

afterEach(async () => {
  await Promise.all(providers.splice(0).map((provider) => provider.close()));
});

function setup() {
  const backend = new WrongAnswersBackend();
  const provider = createProvider(backend, { pollIntervalMs: 10, callTimeoutMs: 2000, closeTimeoutMs: 500 });
  providers.push(provider);
  return { backend, provider };
}

/** The outcome with its grant's fields replaced (its methods kept). */
function withGrant(patch: Record<string, unknown>) {
  return (outcome: GrantOutcome): unknown => (outcome.granted ? { granted: true, grant: { ...outcome.grant, ...patch } } : outcome);
}

async function contractError(promise: Promise<unknown>): Promise<AdapterContractError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(AdapterContractError);
  return error as AdapterContractError;
}

test('tryGrant resolving to null (contract v1) is an AdapterContractError naming the adapter, the method and the rule', async () => {
  const { backend, provider } = setup();
  backend.answers.tryGrant = () => null;
  const error = await contractError(provider.tryAcquire('k'));
  expect(error.message).toBe('adapter "scripted": tryGrant must resolve to granted(grant) or busy(wake), got null');
  expect(error.code).toBe(ErrorCode.AdapterContract);
  expect(error.code).toBe('HOLDFAST_ADAPTER_CONTRACT');
  expect(isHoldfastError(error, ErrorCode.AdapterContract)).toBe(true);
  expect([error.backend, error.method, error.got]).toEqual(['scripted', 'tryGrant', 'null']);
});

test('a waiting acquire does not retry an adapter bug: it fails at the first wrong answer', async () => {
  const { backend, provider } = setup();
  backend.answers.tryGrant = () => undefined;
  const error = await contractError(provider.acquire('k', { waitMs: 1000 }));
  expect(error.message).toBe('adapter "scripted": tryGrant must resolve to granted(grant) or busy(wake), got undefined');
  expect(backend.timesOf('tryGrant')).toHaveLength(1);
});

describe('a grant of the wrong shape is never handed out, and what the attempt may hold is abandoned', () => {
  const cases: [string, (outcome: GrantOutcome) => unknown, string][] = [
    [
      'granted is not a boolean',
      (outcome) => ({ ...outcome, granted: 'yes' }),
      'resolve to granted(grant) or busy(wake), got an object { granted, grant }',
    ],
    ['no grant object', () => ({ granted: true }), 'resolve to granted(grant) with a grant object, got undefined'],
    ['token a number', withGrant({ token: 5 }), 'resolve to a grant whose token is a bigint above 0n, got 5 (a number)'],
    ['token 0n', withGrant({ token: 0n }), 'resolve to a grant whose token is a bigint above 0n, got 0n'],
    ['token negative', withGrant({ token: -3n }), 'resolve to a grant whose token is a bigint above 0n, got -3n'],
    [
      'acquiredAt a number',
      withGrant({ acquiredAt: 1700000000000 }),
      'resolve to a grant whose acquiredAt is a valid Date, got 1700000000000 (a number)',
    ],
    [
      'acquiredAt an invalid Date',
      withGrant({ acquiredAt: new Date(Number.NaN) }),
      'resolve to a grant whose acquiredAt is a valid Date, got an invalid Date',
    ],
    [
      'expiresAt undefined',
      withGrant({ expiresAt: undefined }),
      'resolve to a grant whose expiresAt is a valid Date or null, got undefined',
    ],
    [
      'expiresAt a string',
      withGrant({ expiresAt: '2030-01-01' }),
      'resolve to a grant whose expiresAt is a valid Date or null, got "2030-01-01" (a string)',
    ],
    ['no extend', withGrant({ extend: undefined }), 'resolve to a grant with an extend(ttlMs, call) method, got undefined'],
    ['no release', withGrant({ release: 1 }), 'resolve to a grant with a release(call) method, got 1 (a number)'],
    ['no isHeld', withGrant({ isHeld: null }), 'resolve to a grant with an isHeld(call) method, got null'],
  ];
  test.each(cases)('%s', async (_title, answer, rule) => {
    const { backend, provider } = setup();
    backend.answers.tryGrant = answer;
    const error = await contractError(provider.tryAcquire('k'));
    expect(error.message).toBe(`adapter "scripted": tryGrant must ${rule}`);
    expect(backend.abandoned, 'the attempt is undone by its lockId').toHaveLength(1);
    expect(backend.holders.size, 'nothing is left holding the key').toBe(0);
    expect(provider.held()).toEqual([]);
  });
});

test('a grant of the right shape works as before; expiresAt null is allowed', async () => {
  const { backend, provider } = setup();
  backend.answers.tryGrant = withGrant({ expiresAt: null });
  const lock = await provider.tryAcquire('k');
  expect(lock?.token).toBe(1n);
  await lock?.extend();
  expect(await lock?.isHeld()).toBe(true);
  await lock?.release();
  expect(backend.holders.size).toBe(0);
  expect(backend.abandoned).toEqual([]);
});

test('busy passes through unchanged: its wake hint reaches waitForChange as the adapter gave it', async () => {
  const backend = new WakingBackend();
  const provider = createProvider(backend, { pollIntervalMs: 10, callTimeoutMs: 2000 });
  providers.push(provider);
  const hint = { index: 7 };
  backend.busyWake = hint;
  backend.holders.set('k', 'another');
  const waiting = provider.acquire('k', { waitMs: 2000 });
  await new Promise((resolve) => setTimeout(resolve, 20));
  backend.holders.delete('k');
  backend.wake('k');
  await (await waiting).release();
  expect(backend.waits[0]?.wake).toBe(hint);
});

describe("a grant's own answers", () => {
  test('grant.extend resolving to undefined rejects extend() with the named error', async () => {
    const { backend, provider } = setup();
    const lock = await provider.acquire('k');
    backend.answers.extend = () => undefined;
    const error = await contractError(lock.extend());
    expect(error.message).toBe('adapter "scripted": grant.extend must resolve to stillHeld(expiresAt) or NOT_HELD, got undefined');
  });

  test('renewals answered with the wrong shape are failures: the lock is reported lost by its lease end, never kept on them', async () => {
    const { backend, provider } = setup();
    const lock = await provider.acquire('k', { ttlMs: 300 });
    backend.answers.extend = () => ({ held: 'yes' });
    const reason = await new Promise<unknown>((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)));
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as Error).cause).toBeInstanceOf(AdapterContractError);
    expect(backend.timesOf('extend').length, 'renewal was tried').toBeGreaterThan(0);
  });

  test('grant.extend with held true and a bad expiresAt', async () => {
    const { backend, provider } = setup();
    const lock = await provider.acquire('k');
    backend.answers.extend = () => ({ held: true, expiresAt: 1 });
    const error = await contractError(lock.extend());
    expect(error.message).toBe(
      'adapter "scripted": grant.extend must resolve to stillHeld(expiresAt) with expiresAt a valid Date or null, got 1 (a number)',
    );
  });

  test('grant.extend with held neither true nor false', async () => {
    const { backend, provider } = setup();
    const lock = await provider.acquire('k');
    backend.answers.extend = () => ({ expiresAt: new Date() });
    const error = await contractError(lock.extend());
    expect(error.message).toBe(
      'adapter "scripted": grant.extend must resolve to stillHeld(expiresAt) or NOT_HELD, got an object { expiresAt }',
    );
  });

  test('grant.release resolving to undefined: the release is not confirmed and the handle ends as lost', async () => {
    const { backend, provider } = setup();
    const lock = await provider.acquire('k');
    backend.answers.release = () => undefined;
    const error = await contractError(lock.release());
    expect(error.message).toBe('adapter "scripted": grant.release must resolve to a boolean, got undefined');
    expect((lock.signal.reason as Error).message).toContain('release was not confirmed');
  });

  test('grant.isHeld resolving to a string', async () => {
    const { backend, provider } = setup();
    const lock = await provider.acquire('k');
    backend.answers.isHeld = () => 'yes';
    const error = await contractError(lock.isHeld());
    expect(error.message).toBe('adapter "scripted": grant.isHeld must resolve to a boolean, got "yes" (a string)');
  });
});

describe('inspect, list, forceRelease and slotHolders', () => {
  test('inspect: null and a LockInfo pass', async () => {
    const { backend, provider } = setup();
    expect(await provider.inspect('k')).toBeNull();
    backend.answers.inspect = () => GOOD_HOLDER;
    expect(await provider.inspect('k')).toBe(GOOD_HOLDER);
    backend.answers.inspect = () => ({ ...GOOD_HOLDER, token: 0n, details: { holdfast: false } });
    expect((await provider.inspect('k'))?.token, "0n: a holder that is not Holdfast's").toBe(0n);
  });

  const holders: [string, unknown, string][] = [
    ['undefined', undefined, 'object, got undefined'],
    ['key missing', { ...GOOD_HOLDER, key: undefined }, 'whose key is a string, got undefined'],
    ['owner a number', { ...GOOD_HOLDER, owner: 3 }, 'whose owner is a string, got 3 (a number)'],
    ['reason null', { ...GOOD_HOLDER, reason: null }, 'whose reason is a string or undefined, got null'],
    ['acquiredAt a string', { ...GOOD_HOLDER, acquiredAt: 'now' }, 'whose acquiredAt is a valid Date, got "now" (a string)'],
    ['expiresAt invalid', { ...GOOD_HOLDER, expiresAt: new Date('x') }, 'whose expiresAt is a valid Date or null, got an invalid Date'],
    ['token a string', { ...GOOD_HOLDER, token: '5' }, 'whose token is a bigint, 0n or more, got "5" (a string)'],
    ['details null', { ...GOOD_HOLDER, details: null }, 'whose details are an object or undefined, got null'],
  ];
  test.each(holders)('inspect: %s', async (_title, answer, rule) => {
    const { backend, provider } = setup();
    backend.answers.inspect = () => answer;
    const error = await contractError(provider.inspect('k'));
    expect(error.message).toBe(`adapter "scripted": inspect must resolve to null or a LockInfo ${rule}`);
  });

  test('list: an array of LockInfo passes; anything else, or a bad item, is named', async () => {
    const { backend, provider } = setup();
    backend.answers.list = () => [GOOD_HOLDER];
    expect(await provider.list()).toEqual([GOOD_HOLDER]);
    backend.answers.list = () => null;
    expect((await contractError(provider.list())).message).toBe('adapter "scripted": list must resolve to an array of LockInfo, got null');
    backend.answers.list = () => [GOOD_HOLDER, { ...GOOD_HOLDER, token: 2 }];
    expect((await contractError(provider.list())).message).toBe(
      'adapter "scripted": list must resolve to an array of LockInfo whose token is a bigint, 0n or more (item 1), got 2 (a number)',
    );
  });

  test('forceRelease must resolve to a boolean', async () => {
    const { backend, provider } = setup();
    expect(await provider.forceRelease('k')).toBe(false);
    backend.answers.forceRelease = () => 1;
    expect((await contractError(provider.forceRelease('k'))).message).toBe(
      'adapter "scripted": forceRelease must resolve to a boolean, got 1 (a number)',
    );
  });

  test('slotHolders must resolve to an array of LockInfo', async () => {
    const { backend, provider } = setup();
    const semaphore = provider.semaphore('s', 2);
    backend.answers.slotHolders = () => [GOOD_HOLDER];
    expect(await semaphore.holders()).toEqual([GOOD_HOLDER]);
    backend.answers.slotHolders = () => ({ 0: GOOD_HOLDER });
    expect((await contractError(semaphore.holders())).message).toBe(
      'adapter "scripted": slotHolders must resolve to an array of LockInfo, got an object { 0 }',
    );
  });

  test('tryGrantSlot is held to the rules of tryGrant, and its wrong grant abandoned', async () => {
    const { backend, provider } = setup();
    backend.answers.tryGrantSlot = () => null;
    const error = await contractError(provider.semaphore('s', 2).tryAcquire());
    expect(error.message).toBe('adapter "scripted": tryGrantSlot must resolve to granted(grant) or busy(wake), got null');
    expect(backend.abandoned).toHaveLength(1);
    expect(backend.holders.size).toBe(0);
  });
});

describe('the backend itself, when the provider is built', () => {
  function without(member: string, value?: unknown): LockBackend {
    const backend = new ScriptedBackend();
    Object.defineProperty(backend, member, { value, configurable: true });
    return backend;
  }

  test('a missing method is named at createProvider, not at first use', () => {
    expect(() => createProvider(without('tryGrant'))).toThrow('adapter "scripted": tryGrant must be a method, got undefined');
    expect(() => createProvider(without('list', []))).toThrow('adapter "scripted": list must be a method, got an array of 0');
  });

  test('no backend at all', () => {
    expect(() => createProvider(null as unknown as LockBackend)).toThrow(
      'adapter "undefined": createProvider must get a LockBackend, got null',
    );
  });

  test('name, capabilities, optional methods, and semaphores as a pair', () => {
    expect(() => createProvider(without('name', ''))).toThrow('adapter "": name must be a non-empty string, got "" (a string)');
    expect(() => createProvider(without('capabilities', null))).toThrow(
      'adapter "scripted": capabilities must be a Capabilities object, got null',
    );
    expect(() => createProvider(without('waitForChange', true))).toThrow(
      'adapter "scripted": waitForChange must be a method or absent, got true (a boolean)',
    );
    expect(() => createProvider(without('tryGrantSlot', async () => busy()))).toThrow(
      'adapter "scripted": tryGrantSlot must come with slotHolders (both or neither), got a function',
    );
    expect(() => createProvider(without('tryGrantMode', async () => busy()))).toThrow(
      'adapter "scripted": tryGrantMode must come with modeHolders (both or neither), got a function',
    );
    expect(() => createProvider(without('modeHolders', 'no'))).toThrow(
      'adapter "scripted": modeHolders must be a method or absent, got "no" (a string)',
    );
  });

  test('an adapter written before read-write locks still works, and readWrite() says why not with a typed error', async () => {
    const provider = createProvider(new ScriptedBackend());
    providers.push(provider);
    expect(() => provider.readWrite('rw')).toThrow(
      expect.objectContaining({ code: ErrorCode.Unsupported, message: expect.stringContaining('implements no tryGrantMode') }),
    );
    const noted = new ScriptedBackend();
    Object.defineProperty(noted, 'capabilities', { value: { ...noted.capabilities, noReadWrite: 'not on this server' } });
    Object.assign(noted, { tryGrantMode: async () => busy(), modeHolders: async () => [] });
    const declined = createProvider(noted);
    providers.push(declined);
    expect(() => declined.readWrite('rw')).toThrow(expect.objectContaining({ message: expect.stringContaining('not on this server') }));
    // Multi-key locks are a composition of plain locks: they need nothing new from the adapter.
    expect(await declined.tryAcquireAll(['a', 'b'])).not.toBeNull();
  });

  test("an adapter's optional methods stay absent: semaphores are refused up front, as before", () => {
    const provider = createProvider(new ScriptedBackend());
    providers.push(provider);
    expect(() => provider.semaphore('s', 2)).toThrow(expect.objectContaining({ code: ErrorCode.Unsupported }));
  });

  test('capabilities are read through: an adapter that learns them later is seen as it is now', () => {
    const backend = new ScriptedBackend();
    const provider = createProvider(backend);
    providers.push(provider);
    Object.defineProperty(backend, 'capabilities', { value: { ...backend.capabilities, noSemaphores: 'learned later' } });
    expect(provider.capabilities.noSemaphores).toBe('learned later');
  });
});
