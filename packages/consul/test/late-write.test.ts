import { ErrorCode, type LockProvider } from '@holdfast/core';
import { FaultProxy } from '@holdfast/test-harness/faults';
import { within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';

const consul = await useBackend('consul');

describe.skipIf(!consul.url)('a lock write that lands after its acquire gave up is not kept alive', () => {
  const address = consul.url?.replace('consul://', 'http://') ?? '';
  const providers: LockProvider[] = [];
  const proxies: FaultProxy[] = [];
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
    await Promise.all(proxies.splice(0).map((p) => p.close()));
  });

  for (const sessionMode of ['shared', 'per-lock'] as const) {
    test(`session=${sessionMode}: the write held back 3 s, the caller gave up at 1 s; a waiter still gets the key`, async () => {
      const agent = new URL(address);
      const proxy = await FaultProxy.start({ host: agent.hostname, port: Number(agent.port) });
      proxies.push(proxy);
      const prefix = `holdfast-late-${sessionMode}`;
      const stalled = createConsulProvider({
        url: `http://127.0.0.1:${proxy.address.port}`,
        prefix,
        lockDelayMs: 1000,
        sessionMode,
        callTimeoutMs: 1000,
      });
      const waiter = createConsulProvider({ url: address, prefix, lockDelayMs: 1000 });
      providers.push(stalled, waiter);
      // Request 1 creates the session, request 2 is the lock transaction: hold it back.
      const hold = proxy.holdClientChunk(2, 3000);
      const error = await within(
        stalled.tryAcquire('job').catch((e: unknown) => e),
        5000,
        'stalled tryAcquire',
      );
      expect(error).toMatchObject({ code: ErrorCode.Backend });
      expect((await hold.engaged).preview).toContain('/v1/txn');
      await within(hold.released, 5000, 'the held write passed on');
      const landedAt = Date.now();
      // Whether the late write took the key or found its session gone, the key must not stay held.
      const lock = await within(waiter.acquire('job', { waitMs: 8000 }), 9000, 'waiter acquire after the late write');
      const freeAfter = Date.now() - landedAt;
      console.info(`[consul late write ${sessionMode}] waiter got the key ${freeAfter} ms after the held write was passed on`);
      expect(freeAfter).toBeLessThan(4000);
      await lock.release();
    });
  }
});
