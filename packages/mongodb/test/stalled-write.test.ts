import { ErrorCode, type Lock } from '@holdfast/core';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { provider } from './fixtures.js';
import { commandWith, StallProxy } from './stall-proxy.js';

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

  // 30 s: A waits for its own late reply, so the server alone must refuse the write; default: A gives up at 5 s.
  test.each([30_000, undefined])(
    `a grab write delivered ${STALL_MS} ms late never lands while another provider holds the lock (A's call timeout %s)`,
    async (callTimeoutMs) => {
      const proxied = new URL(url);
      proxied.port = String(proxy.port);
      const a = provider(proxied.href, { owner: 'stalled', ...(callTimeoutMs === undefined ? {} : { callTimeoutMs }) });
      const b = provider(url, { owner: 'prompt' });
      const key = `stalled-grab/${Date.now().toString(36)}`;
      try {
        // Connect A first, so the only message held is the grab's write.
        expect(await a.inspect(key)).toBeNull();
        const start = Date.now();
        // The write that would grant A: any insert or findAndModify naming the key, except the old latch's.
        const held = proxy.holdNext(commandWith(['insert', 'findAndModify'], key, ['latches']), STALL_MS);
        const fromA = a.tryAcquire(key).then(
          (lock) => watch(lock, start),
          (error: unknown) => ({ error, at: Date.now() - start }),
        );
        await Promise.race([held.held, fromA.then(() => Promise.reject(new Error('A finished without sending a grab write')))]);
        const lockB = await b.acquire(key, { waitMs: 15_000 });
        const outcomeB = watch(lockB, start);
        const outcomeA = await fromA;
        await held.delivered;
        console.info(
          `[stalled grab] B granted at ${outcomeB.grantedAt} ms; A answered at ${'error' in outcomeA ? outcomeA.at : outcomeA.grantedAt} ms`,
        );
        // Let any late loss notice reach B (its holder check runs every 250 ms).
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const report = JSON.stringify({
          a:
            'error' in outcomeA
              ? String(outcomeA.error)
              : { granted: outcomeA.lock !== null, at: outcomeA.grantedAt, token: String(outcomeA.lock?.token), lostAt: outcomeA.lostAt },
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
    },
  );

  test('a grab abandoned by its caller and landing later is freed at once, not kept alive by the process ping', async () => {
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    const a = provider(proxied.href, { owner: 'abandoned', callTimeoutMs: 1_000 });
    const b = provider(url, { owner: 'next' });
    const key = `abandoned-grab/${Date.now().toString(36)}`;
    try {
      expect(await a.inspect(key)).toBeNull();
      const held = proxy.holdNext(commandWith(['insert', 'findAndModify'], key, ['latches']), 3_000);
      const started = Date.now();
      const failure = await a.tryAcquire(key).then(
        () => null,
        (error: unknown) => error as { code?: string },
      );
      expect(failure?.code, 'A gave up at its call timeout').toBe(ErrorCode.Backend);
      expect(Date.now() - started).toBeLessThan(2_000);
      await held.delivered;
      const landedAt = Date.now();
      // A stays open and pings every 250 ms: only its own unlock of the abandoned grab can free the key.
      let lockB: Lock | null = null;
      while (!lockB) {
        if (Date.now() - landedAt > 5_000)
          throw new Error(
            `the abandoned grab still held the key 5 s after it landed: ${JSON.stringify(await b.inspect(key), (_name, value: unknown) => (typeof value === 'bigint' ? String(value) : value))}`,
          );
        lockB = await b.tryAcquire(key);
        if (!lockB) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const freedAfterMs = Date.now() - landedAt;
      console.info(`[abandoned grab] key free ${freedAfterMs} ms after the late write landed`);
      expect(freedAfterMs).toBeLessThan(1_500);
      expect((await b.inspect(key))?.owner).toBe('next');
      await lockB.release();
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
    }
  });

  test('a release delivered late never frees the next holder (after a forced release and a new grant)', async () => {
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    const a = provider(proxied.href, { owner: 'late-release', callTimeoutMs: 30_000 });
    const admin = provider(url, { owner: 'admin' });
    const c = provider(url, { owner: 'successor' });
    const key = `late-release/${Date.now().toString(36)}`;
    try {
      const lockA = await a.tryAcquire(key);
      expect(lockA).not.toBeNull();
      const held = proxy.holdNext(commandWith(['insert', 'findAndModify'], key, ['latches']), 3_000);
      const releasing = lockA!.release().then(
        () => 'released',
        (error: unknown) => `failed: ${String(error)}`,
      );
      await held.held;
      expect(await admin.forceRelease(key)).toBe(true);
      const lockC = await c.acquire(key, { waitMs: 5_000 });
      await held.delivered;
      expect(await releasing).toBe('released');
      // A's late write met a newer version and was refused: C still holds the lock.
      expect(lockC.signal.aborted).toBe(false);
      expect(await lockC.isHeld()).toBe(true);
      expect((await admin.inspect(key))?.owner).toBe('successor');
      expect(await admin.tryAcquire(key)).toBeNull();
      await lockC.release();
    } finally {
      await Promise.allSettled([a.close(), admin.close(), c.close()]);
    }
  });

  test("a grant whose reply comes after the holder's pings stalled past the lease is not handed out", async () => {
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    const a = provider(proxied.href, { owner: 'late-reply', callTimeoutMs: 30_000 });
    const b = provider(url, { owner: 'overtaker' });
    const key = `late-reply/${Date.now().toString(36)}`;
    try {
      expect(await a.inspect(key)).toBeNull();
      // A's pings stop reaching the server (its next ping is held, and the pinger waits for it)...
      const ping = proxy.holdNext(commandWith(['findAndModify'], 'lockpings'), STALL_MS + 1_000);
      await ping.held;
      // ...and A's grab commits, but the write after it (the mirror) is held, so A hears nothing for a while.
      // (The mirror of a new key is inserted into `locks`; the version record goes to `locks.versions`.)
      const mirror = proxy.holdNext(commandWith(['update', 'insert'], key, ['locks.versions']), STALL_MS);
      const start = Date.now();
      const fromA = a.tryAcquire(key).then(
        (lock) => watch(lock, start),
        (error: unknown) => ({ error, at: Date.now() - start }),
      );
      await mirror.held;
      // A's lock is on the server but its pings have stopped: B takes it over after the lease.
      const lockB = await b.acquire(key, { waitMs: STALL_MS - 1_000 });
      const outcomeB = watch(lockB, start);
      const outcomeA = await fromA;
      console.info(
        `[late reply] B took over at ${outcomeB.grantedAt} ms (token ${lockB.token}); A answered at ${'error' in outcomeA ? outcomeA.at : outcomeA.grantedAt} ms`,
      );
      if (!('error' in outcomeA) && outcomeA.lock) {
        expect(outcomeB.lostAt, `A was handed token ${outcomeA.lock.token} while B held token ${lockB.token}`).toBeDefined();
      }
      expect('error' in outcomeA ? null : outcomeA.lock).toBeNull();
      expect(lockB.signal.aborted).toBe(false);
      expect((await b.inspect(key))?.owner).toBe('overtaker');
      await lockB.release();
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
    }
  });
});
