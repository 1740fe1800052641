import { describe, expect, test } from 'vitest';
import { createProvider } from '../src/backend-index.js';
import { BackendError, ErrorCode, isHoldfastError, LockAbortedError, LockLostError, LockTimeoutError } from '../src/index.js';
import { ScriptedBackend } from './fixtures/scripted-backend.js';

/** Slack for timer and scheduling jitter on a loaded 2-core machine. */
const SLACK_MS = 250;

async function timed<T>(promise: Promise<T>): Promise<{ outcome: T | unknown; ms: number; failed: boolean }> {
  const started = performance.now();
  try {
    return { outcome: await promise, ms: performance.now() - started, failed: false };
  } catch (error) {
    return { outcome: error, ms: performance.now() - started, failed: true };
  }
}

function setup(options: { callTimeoutMs?: number; closeTimeoutMs?: number; pollIntervalMs?: number } = {}) {
  const backend = new ScriptedBackend();
  const provider = createProvider(backend, { callTimeoutMs: 400, closeTimeoutMs: 400, pollIntervalMs: 20, ...options });
  return { backend, provider };
}

describe('every backend call is bounded', () => {
  test('tryAcquire against a backend that never answers fails with BackendError at the per-call timeout', async () => {
    const { backend, provider } = setup();
    backend.behaviour.tryGrant = 'hang';
    const { outcome, ms, failed } = await timed(provider.tryAcquire('k'));
    expect(failed).toBe(true);
    expect(isHoldfastError(outcome, ErrorCode.Backend), String(outcome)).toBe(true);
    expect(ms).toBeGreaterThanOrEqual(390);
    expect(ms).toBeLessThan(400 + SLACK_MS);
    expect(backend.aborts).toEqual(['tryGrant']);
    backend.behaviour.close = 'normal';
    await provider.close();
  });

  test('acquire({ waitMs }) against a backend that never answers fails at the wait deadline, not the call timeout', async () => {
    const { backend, provider } = setup({ callTimeoutMs: 5000 });
    backend.behaviour.tryGrant = 'hang';
    const { outcome, ms } = await timed(provider.acquire('k', { waitMs: 300 }));
    expect(outcome).toBeInstanceOf(BackendError);
    expect(ms).toBeLessThan(300 + SLACK_MS);
    await provider.close();
  });

  test("the caller's AbortSignal ends an acquire whose backend call is in flight", async () => {
    const { backend, provider } = setup({ callTimeoutMs: 5000 });
    backend.behaviour.tryGrant = 'hang';
    const { outcome, ms } = await timed(provider.acquire('k', { signal: AbortSignal.timeout(150) }));
    expect(outcome).toBeInstanceOf(LockAbortedError);
    expect(ms).toBeLessThan(150 + SLACK_MS);
    expect(backend.aborts).toEqual(['tryGrant']);
    await provider.close();
  });

  test('a grant that lands after the caller gave up is released, leaving nothing behind', async () => {
    const { backend, provider } = setup({ callTimeoutMs: 100 });
    backend.behaviour.tryGrant = 'hang';
    await expect(provider.tryAcquire('k')).rejects.toBeInstanceOf(BackendError);
    expect(backend.heldBack).toHaveLength(1);
    backend.heldBack[0]!();
    await expect.poll(() => backend.holders.has('k'), { timeout: 1000, interval: 5 }).toBe(false);
    await provider.close();
  });

  test('an acquire aborted while its grant lands answers only after that grant was undone', async () => {
    const { backend, provider } = setup({ callTimeoutMs: 5000 });
    // The server grants, but the abort cuts the answer off: the adapter ends its call at the abort, as it must.
    backend.tryGrant = (request, call) =>
      new Promise((_, reject) => {
        const landed = (): void => {
          backend.holders.set(request.key, request.lockId);
          reject(call.signal.reason);
        };
        call.signal.addEventListener('abort', landed, { once: true });
      });
    backend.behaviour.release = 'slow';
    backend.slowMs = 50;
    for (const how of ['tryAcquire', 'acquire'] as const) {
      const signal = AbortSignal.timeout(50);
      const attempt = how === 'tryAcquire' ? provider.tryAcquire('k', { signal }) : provider.acquire('k', { signal });
      const { outcome, ms } = await timed(attempt);
      expect(outcome, how).toBeInstanceOf(LockAbortedError);
      expect(backend.holders.has('k'), `the aborted ${how} answered while the grant it was cut off from still held the key`).toBe(false);
      expect(ms, `the aborted ${how} waited for its undo past the grace`).toBeLessThan(50 + 500 + SLACK_MS);
    }
    await provider.close();
  });

  test('a grant whose reply comes after its lease ran out is never handed out, and is released', async () => {
    const { backend, provider } = setup({ callTimeoutMs: 5000 });
    backend.behaviour.tryGrant = 'hang';
    const attempt = provider.tryAcquire('k', { ttlMs: 100 }).catch((error: unknown) => error);
    await expect.poll(() => backend.heldBack.length, { timeout: 1000, interval: 5 }).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 150));
    backend.heldBack[0]!();
    const outcome = await attempt;
    expect(outcome).toBeInstanceOf(BackendError);
    expect(String((outcome as Error).message)).toMatch(/after its lease had run out/);
    await expect
      .poll(() => backend.holders.has('k'), { timeout: 1000, interval: 5, message: 'the stale grant was not released' })
      .toBe(false);
    await provider.close();
  });

  test("the late release of an abandoned attempt never frees the waiting acquire's next grant", async () => {
    const { backend, provider } = setup({ callTimeoutMs: 100 });
    backend.behaviour.tryGrant = 'hang';
    const waiting = provider.acquire('k', { waitMs: 3000, waitForBackend: true });
    await expect.poll(() => backend.aborts.length, { timeout: 1000, interval: 5 }).toBe(1);
    backend.behaviour.tryGrant = 'normal';
    const lock = await waiting;
    const holder = backend.holders.get('k');
    backend.heldBack[0]!();
    await expect
      .poll(() => backend.releases.length, { timeout: 1000, interval: 5, message: 'the abandoned attempt was not released' })
      .toBe(1);
    expect(backend.releases[0], 'the abandoned attempt and the grant shared a lockId').not.toBe(holder);
    expect(backend.holders.get('k'), "the late release freed the new holder's grant").toBe(holder);
    expect(await lock.isHeld()).toBe(true);
    await provider.close();
  });

  test('a waiting acquire retries a failed attempt under a new lockId, so its delayed undo cannot free the retry', async () => {
    const { backend, provider } = setup();
    const lockIds: string[] = [];
    const tryGrant = backend.tryGrant.bind(backend);
    backend.tryGrant = (request, call) => {
      lockIds.push(request.lockId);
      return tryGrant(request, call);
    };
    backend.behaviour.tryGrant = 'fail';
    backend.failuresLeft = 2;
    const lock = await provider.acquire('k', { waitMs: 3000, waitForBackend: true });
    expect(lockIds, 'two failed attempts, then the grant').toHaveLength(3);
    expect(new Set(lockIds).size, 'each attempt had its own lockId').toBe(3);
    expect(backend.holders.get('k')).toBe(lockIds[2]);
    await lock.release();
    await provider.close();
  });

  test('a waiting acquire retries a busy attempt under a new lockId, so an undo of its minority cannot free the retry', async () => {
    const { backend, provider } = setup({ pollIntervalMs: 20 });
    const first = await provider.acquire('k');
    const lockIds: string[] = [];
    const tryGrant = backend.tryGrant.bind(backend);
    backend.tryGrant = (request, call) => {
      lockIds.push(request.lockId);
      return tryGrant(request, call);
    };
    const waiting = provider.acquire('k', { waitMs: 3000 });
    await expect.poll(() => lockIds.length, { timeout: 1000, interval: 5, message: 'no busy attempt' }).toBeGreaterThanOrEqual(1);
    await first.release();
    const lock = await waiting;
    expect(lockIds.length, 'at least one busy attempt, then the grant').toBeGreaterThanOrEqual(2);
    expect(new Set(lockIds).size, 'each attempt had its own lockId').toBe(lockIds.length);
    expect(backend.holders.get('k')).toBe(lockIds.at(-1));
    await lock.release();
    await provider.close();
  });

  test('a waiting acquire retries backend failures until it gets the lock', async () => {
    const { backend, provider } = setup();
    backend.behaviour.tryGrant = 'fail';
    backend.failuresLeft = 3;
    const lock = await provider.acquire('k', { waitMs: 2000, waitForBackend: true });
    expect(backend.holders.get('k')).toBeDefined();
    expect(lock.token).toBe(1n);
    await provider.close();
  });

  test('a waiting acquire that never reaches the backend reports the last backend error at its deadline', async () => {
    const { backend, provider } = setup();
    backend.behaviour.tryGrant = 'fail';
    const { outcome, ms } = await timed(provider.acquire('k', { waitMs: 300 }));
    expect(outcome).toBeInstanceOf(BackendError);
    expect(String((outcome as Error).message)).toContain('ECONNREFUSED');
    expect(ms).toBeLessThan(300 + SLACK_MS);
    await provider.close();
  });

  test('waitMs: 0 makes one attempt and never waits; a busy key is a LockTimeoutError, not a backend failure', async () => {
    const { provider } = setup();
    const other = await provider.acquire('k', { waitMs: 0 });
    const { outcome, ms } = await timed(provider.acquire('k', { waitMs: 0 }));
    expect(outcome).toBeInstanceOf(LockTimeoutError);
    expect(ms).toBeLessThan(SLACK_MS);
    await other.release();
    await provider.close();
  });

  test('a renewal that never answers ends the lock as lost by the safety deadline', async () => {
    const { backend, provider } = setup({ callTimeoutMs: 5000 });
    const lock = await provider.acquire('k', { ttlMs: 300 });
    backend.behaviour.extend = 'hang';
    const started = performance.now();
    const reason = await new Promise((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)));
    expect(reason).toBeInstanceOf(LockLostError);
    expect(performance.now() - started).toBeLessThan(300);
    backend.behaviour.release = 'normal';
    await provider.close();
  });
});

describe('a lost grant is let go of on the server', () => {
  test('once renewal gave up, the record is released as soon as the backend answers again', async () => {
    const { backend, provider } = setup({ callTimeoutMs: 5000 });
    const lock = await provider.acquire('k', { ttlMs: 200 });
    backend.behaviour.extend = 'fail';
    backend.behaviour.release = 'fail';
    await new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(backend.holders.has('k'), 'the record is still there while the backend fails').toBe(true);
    backend.behaviour.release = 'normal';
    await expect
      .poll(() => backend.holders.has('k'), {
        timeout: 2000,
        interval: 10,
        message: 'the lost grant was not released after the backend recovered',
      })
      .toBe(false);
    await provider.close();
  });
});

describe('an unconfirmed release is retried', () => {
  test('a release the backend refused is retried in the background until it answers', async () => {
    const { backend, provider } = setup();
    const lock = await provider.acquire('k');
    backend.behaviour.release = 'fail';
    await expect(lock.release()).rejects.toBeInstanceOf(BackendError);
    backend.behaviour.release = 'normal';
    await expect
      .poll(() => backend.holders.has('k'), {
        timeout: 2000,
        interval: 10,
        message: 'the record of an unconfirmed release was never freed',
      })
      .toBe(false);
    await provider.close();
  });
});

describe('close() is bounded', () => {
  test('with a backend that never answers, close() returns within closeTimeoutMs and the holder is told it lost the lock', async () => {
    const { backend, provider } = setup({ closeTimeoutMs: 300 });
    const lock = await provider.acquire('k');
    backend.behaviour.release = 'hang';
    backend.behaviour.close = 'hang';
    const { ms } = await timed(provider.close());
    expect(ms).toBeLessThan(300 + SLACK_MS);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(backend.aborts).toEqual(expect.arrayContaining(['release', 'close']));
  });

  test('a release the backend refuses reports the lock lost, not released', async () => {
    const { backend, provider } = setup();
    const lock = await provider.acquire('k');
    backend.behaviour.release = 'fail';
    await expect(lock.release()).rejects.toBeInstanceOf(BackendError);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    backend.behaviour.release = 'normal';
    await provider.close();
  });
});
