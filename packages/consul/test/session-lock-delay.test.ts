import { randomBytes } from 'node:crypto';
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { elapsed, lostWithin } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';
import { type SwitchableProxy, startSwitchableProxy } from './switchable-proxy.js';

const consul = await useBackend('consul');

const LOCK_DELAY_MS = 2000;

describe.skipIf(!consul.url)('a holder cut off from its agent counts on the lock-delay, not the session TTL', () => {
  const address = consul.url?.replace('consul://', 'http://') ?? '';
  const providers: LockProvider[] = [];
  const proxies: SwitchableProxy[] = [];
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
    await Promise.all(proxies.splice(0).map((p) => p.close()));
  });

  for (const sessionMode of ['shared', 'per-lock'] as const) {
    test(`session=${sessionMode}: told within the ${LOCK_DELAY_MS} ms lock-delay of its last renewal, though its session TTL is 15 s`, async () => {
      // Consul may end a session before its TTL (its node leaving the catalog), and then only the
      // lock-delay keeps the key from others: a holder that cannot renew must give up within it.
      const proxy = await startSwitchableProxy(address);
      proxies.push(proxy);
      const holder = createConsulProvider({
        url: proxy.url,
        prefix: `holdfast-lockdelay-${randomBytes(3).toString('hex')}`,
        lockDelayMs: LOCK_DELAY_MS,
        // The monitor must not be what tells: 30 failed reads 1 s apart would take 30 s.
        monitorRetries: 30,
        monitorRetryMs: 1000,
        sessionMode,
      });
      providers.push(holder);
      // A 30 s lease: session TTL 15 s, renewed every 0.9 s here (half the bound) instead of every 7.5 s.
      const lock = (await holder.tryAcquire('job', { ttlMs: 30_000 }))!;
      expect(lock).not.toBeNull();

      proxy.cut();
      const { ms: lostAfter } = await elapsed(() => lostWithin(lock, 10_000, 'holder told it lost the lock while its agent is cut off'));
      expect((lock.signal.reason as { code?: string }).code).toBe(ErrorCode.Lost);
      expect((lock.signal.reason as Error).message).toMatch(/lock-delay/);
      // From the last renewal that succeeded (at most half the bound before the cut) to the bound.
      expect(lostAfter).toBeLessThan(LOCK_DELAY_MS);
      proxy.restore();
    });
  }
});
