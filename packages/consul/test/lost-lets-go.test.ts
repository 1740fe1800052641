import { randomBytes } from 'node:crypto';
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { elapsed, lostWithin, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';
import { type SwitchableProxy, startSwitchableProxy } from './switchable-proxy.js';

const consul = await useBackend('consul');

describe.skipIf(!consul.url)('a lock declared lost is let go on the server as soon as the agent answers again', () => {
  const address = consul.url?.replace('consul://', 'http://') ?? '';
  const providers: LockProvider[] = [];
  const proxies: SwitchableProxy[] = [];
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
    await Promise.all(proxies.splice(0).map((p) => p.close()));
  });

  for (const sessionMode of ['shared', 'per-lock'] as const) {
    test(`session=${sessionMode}: agent cut off until the holder is told, then back: a waiter gets the key at once`, async () => {
      const proxy = await startSwitchableProxy(address);
      proxies.push(proxy);
      const prefix = `holdfast-letgo-${randomBytes(3).toString('hex')}`;
      // Told "lost" after 3 failed monitor reads 1 s apart; lock-delay 1 s.
      const holder = createConsulProvider({
        url: proxy.url,
        prefix,
        lockDelayMs: 1000,
        monitorRetries: 3,
        monitorRetryMs: 1000,
        sessionMode,
      });
      const waiter = createConsulProvider({ url: address, prefix, lockDelayMs: 1000 });
      providers.push(holder, waiter);
      const key = 'job';
      const lock = (await holder.tryAcquire(key))!;
      expect(lock).not.toBeNull();

      proxy.cut();
      const { ms: lostAfter } = await elapsed(() => lostWithin(lock, 10_000, 'holder told it lost the lock while its agent is cut off'));
      expect((lock.signal.reason as { code?: string }).code).toBe(ErrorCode.Lost);
      // Cut for less than a session TTL (15 s): the server still holds the key under the holder's session.
      expect((await waiter.inspect(key))?.owner).toBe(holder.owner);

      proxy.restore();
      const restoredAt = Date.now();
      // The app never calls release(): the adapter alone must let the key go.
      const taken = await within(waiter.acquire(key, { waitMs: 8000 }), 9000, 'waiter acquire');
      const handoffMs = Date.now() - restoredAt;
      expect(taken.token).toBeGreaterThan(lock.token);
      // Freed by the holder's compare-and-set release (no lock-delay, no session expiry): about one retry period.
      expect(handoffMs).toBeLessThan(3000);
      console.info(
        `[consul let-go ${sessionMode}] told lost ${Math.round(lostAfter)} ms after the cut; key free ${handoffMs} ms after the agent was back`,
      );
      await taken.release();
    });
  }
});
