import type { Lock } from '@holdfast/core';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { provider } from './fixtures.js';
import { StallProxy, commandWith } from './stall-proxy.js';

const mongodb = await useBackend('mongodb');

/** Longer than any in-progress record may be judged abandoned (the old latch: 5 s). */
const STALL_MS = 6_000;

interface Outcome {
  readonly lock: Lock | null;
  readonly grantedAt: number;
  lostAt: number | undefined;
}

function watch(lock: Lock | null, start: number): Outcome {
  const outcome: Outcome = { lock, grantedAt: Date.now() - start, lostAt: undefined };
  if (lock?.signal.aborted) outcome.lostAt = outcome.grantedAt;
  lock?.signal.addEventListener('abort', () => (outcome.lostAt = Date.now() - start), { once: true });
  return outcome;
}

describe.skipIf(!mongodb.url)(`a grab write stalled on the way (${mongodb.label})`, () => {
  const url = mongodb.url!;
  let proxy: StallProxy;
  beforeAll(async () => {
    proxy = await StallProxy.start(Number(new URL(url).port));
  });
  afterAll(() => proxy?.close());

  test(`a grab write delivered ${STALL_MS} ms late never lands while another provider holds the lock`, async () => {
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    // A waits for its own late reply (no call timeout in the way): the server alone must refuse the write.
    const a = provider(proxied.href, { owner: 'stalled', callTimeoutMs: 30_000 });
    const b = provider(url, { owner: 'prompt' });
    const key = `stalled-grab/${Date.now().toString(36)}`;
    try {
      // Connect A first, so the only message held is the grab's write.
      expect(await a.inspect(key)).toBeNull();
      const start = Date.now();
      // The write that would grant A: any insert or findAndModify naming the key, except the old latch's.
      const held = proxy.holdNext(commandWith(['insert', 'findAndModify'], key, ['latches']), STALL_MS);
      const fromA = a.tryAcquire(key).then((lock) => watch(lock, start), (error: unknown) => ({ error, at: Date.now() - start }));
      await Promise.race([held, fromA.then(() => Promise.reject(new Error('A finished without sending a grab write')))]);
      const lockB = await b.acquire(key, { waitMs: 15_000 });
      const outcomeB = watch(lockB, start);
      const outcomeA = await fromA;
      // Let any late loss notice reach B (its holder check runs every 250 ms).
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const report = JSON.stringify({
        a: 'error' in outcomeA ? String(outcomeA.error) : { granted: outcomeA.lock !== null, at: outcomeA.grantedAt, token: String(outcomeA.lock?.token), lostAt: outcomeA.lostAt },
        b: { at: outcomeB.grantedAt, token: String(lockB.token), lostAt: outcomeB.lostAt },
      });
      if (!('error' in outcomeA) && outcomeA.lock) {
        // Granted twice is only acceptable if B had been told it lost the lock before A was granted.
        expect(outcomeB.lostAt, `A granted while B still held the lock: ${report}`).toBeDefined();
        expect(outcomeB.lostAt!, report).toBeLessThanOrEqual(outcomeA.grantedAt);
      }
      // A's write arrived after B held the lock: the server must have refused it.
      expect('error' in outcomeA ? null : outcomeA.lock, report).toBeNull();
      expect(outcomeB.lostAt, report).toBeUndefined();
      const info = await b.inspect(key);
      expect(info?.owner, report).toBe('prompt');
      expect(info?.token, report).toBe(lockB.token);
      await lockB.release();
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
    }
  });
});
