import { ErrorCode, type LockProvider } from '@holdfast/core';
import { type HungListener, hungListener } from '@holdfast/test-harness/faults';
import { abortedWithin, codeOf, timed, until } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';
import { type SwitchableProxy, startSwitchableProxy } from './switchable-proxy.js';

const consul = await useBackend('consul');

/** Far above every bound under test: only a call that never settles reaches it. */
const HANG_MS = 30_000;

describe('every call to a hung agent is bounded by the caller (a loopback listener that never answers)', () => {
  const providers: LockProvider[] = [];
  let hung: HungListener | undefined;
  const onHung = async (
    options: { callTimeoutMs?: number; closeTimeoutMs?: number; sessionMode?: 'per-lock' } = {},
  ): Promise<LockProvider> => {
    hung ??= await hungListener();
    const provider = createConsulProvider({ url: `http://${hung.address.host}:${hung.address.port}`, lockDelayMs: 1000, ...options });
    providers.push(provider);
    return provider;
  };
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
    await hung?.close();
    hung = undefined;
  });

  test('tryAcquire fails at the per-call timeout (callTimeoutMs) with a BackendError', async () => {
    const locks = await onHung({ callTimeoutMs: 1500 });
    const { ms, error } = await timed(locks.tryAcquire('k'), HANG_MS, 'tryAcquire');
    expect(codeOf(error)).toBe(ErrorCode.Backend);
    expect(ms).toBeGreaterThanOrEqual(1400);
    expect(ms).toBeLessThan(2500);
  });

  test('acquire({ waitMs: 2000 }) gives up at about 2 s, not at a socket timeout', async () => {
    const locks = await onHung();
    const { ms, error } = await timed(locks.acquire('k', { waitMs: 2000 }), HANG_MS, 'acquire');
    expect(error).toBeInstanceOf(Error);
    expect([ErrorCode.Backend, ErrorCode.Timeout]).toContain(codeOf(error));
    expect(ms).toBeGreaterThanOrEqual(1900);
    expect(ms).toBeLessThan(3000);
  });

  test("the caller's AbortSignal ends the request in flight, socket included", async () => {
    // per-lock: the session create is the caller's own request (a shared one serves every caller).
    const locks = await onHung({ sessionMode: 'per-lock', callTimeoutMs: 1000 });
    const { ms, error } = await timed(locks.acquire('k', { waitMs: 60_000, signal: AbortSignal.timeout(500) }), HANG_MS, 'acquire');
    expect(codeOf(error)).toBe(ErrorCode.Aborted);
    expect(ms).toBeGreaterThanOrEqual(450);
    expect(ms).toBeLessThan(1500);
    // Not left to a socket timeout: the adapter passed the signal into the request. (Core then undoes
    // the abandoned attempt, abandon(): one owner-checked read on a connection of its own.)
    await until(() => hung!.openConnections < hung!.connectionsAccepted, 300, 'the aborted request closed its socket');
    await until(() => hung!.openConnections === 0, 2000, 'the clean-up read ended at callTimeoutMs');
  });

  test('inspect and forceRelease are bounded too; close() leaves no socket open', async () => {
    const locks = await onHung({ callTimeoutMs: 1000, closeTimeoutMs: 1000 });
    for (const call of [() => locks.inspect('k'), () => locks.forceRelease('k')]) {
      const { ms, error } = await timed<unknown>(call(), HANG_MS, 'inspect / forceRelease');
      expect(codeOf(error)).toBe(ErrorCode.Backend);
      expect(ms).toBeLessThan(2000);
    }
    expect(hung!.connectionsAccepted).toBeGreaterThan(0);
    const { ms } = await timed(locks.close(), HANG_MS, 'close');
    expect(ms).toBeLessThan(2000);
    await until(() => hung!.openConnections === 0, 2000, 'every socket to the hung agent closed');
  });
});

describe.skipIf(!consul.url)('close() while holding locks, when the agent hangs', () => {
  const providers: LockProvider[] = [];
  const proxies: SwitchableProxy[] = [];
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
    await Promise.all(proxies.splice(0).map((p) => p.close()));
  });

  for (const sessionMode of ['shared', 'per-lock'] as const) {
    test(`session=${sessionMode}: close() ends within closeTimeoutMs, holders are told, sockets are destroyed`, async () => {
      const proxy = await startSwitchableProxy(consul.url!.replace('consul://', 'http://'));
      proxies.push(proxy);
      const locks = createConsulProvider({
        url: proxy.url,
        prefix: `holdfast-close-${sessionMode}`,
        lockDelayMs: 1000,
        sessionMode,
        closeTimeoutMs: 2000,
      });
      providers.push(locks);
      const held = [(await locks.tryAcquire('a'))!, (await locks.tryAcquire('b'))!];
      expect(held.every((lock) => lock !== null)).toBe(true);
      proxy.hang();
      const { ms } = await timed(locks.close(), HANG_MS, 'close');
      expect(ms).toBeLessThan(3000);
      for (const lock of held) {
        await abortedWithin(lock.signal, 500, 'holder told at close');
        expect([ErrorCode.Lost, ErrorCode.Released]).toContain(codeOf(lock.signal.reason));
      }
      expect(held.some((lock) => codeOf(lock.signal.reason) === ErrorCode.Lost)).toBe(true);
      await until(() => proxy.openConnections === 0, 2000, 'every socket to the agent closed');
      console.info(`[consul close] hung agent, ${sessionMode}: close() took ${ms} ms`);
    });
  }
});
