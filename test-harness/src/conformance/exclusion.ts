import { ErrorCode, MAX_KEY_BYTES } from '@holdfast/core';
import { expect, test } from 'vitest';
import type { CaseFactory } from './suite-types.js';
import { delay, elapsed, rejection } from './support.js';

export function exclusionCases(cases: CaseFactory): void {
  test('1. tryAcquire on a free key returns a lock and inspect shows it held', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const key = c.key();
    const lock = await locks.tryAcquire(key, { reason: 'conformance 1' });
    expect(lock).not.toBeNull();
    expect(lock!.key).toBe(key);
    expect(lock!.owner).toBe(locks.owner);
    expect(lock!.signal.aborted).toBe(false);
    const info = await locks.inspect(key);
    expect(info?.owner).toBe(locks.owner);
    expect(info?.token).toBe(lock!.token);
    expect(await lock!.isHeld()).toBe(true);
  });

  test('2. a held key is refused at once, through the same and through another instance', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key();
    const held = await a.tryAcquire(key);
    expect(held).not.toBeNull();
    const same = await elapsed(() => a.tryAcquire(key));
    const other = await elapsed(() => b.tryAcquire(key));
    expect(same.value).toBeNull();
    expect(other.value).toBeNull();
    expect(other.ms).toBeLessThan(c.timing.slackMs + 1000);
    expect(await held!.isHeld()).toBe(true);
  });

  test('3. different keys never interfere', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const first = await a.tryAcquire(c.key('first'));
    const second = await b.tryAcquire(c.key('second'));
    expect(first).not.toBeNull();
    expect(second).not.toBeNull();
    await first!.release();
    expect(await second!.isHeld()).toBe(true);
  });

  test('4. release then immediate re-acquire works many times in a row, across instances', async (t) => {
    const c = cases(t);
    const providers = await c.providers2();
    const key = c.key();
    for (let round = 0; round < 10; round++) {
      const lock = await providers[round % 2]!.tryAcquire(key);
      expect(lock, `round ${round}`).not.toBeNull();
      await lock!.release();
    }
    expect(await providers[0].inspect(key)).toBeNull();
  });

  test('5. concurrent contenders across instances never overlap (read-sleep-write counter)', async (t) => {
    const c = cases(t);
    const providers = [await c.provider(), await c.provider(), await c.provider()];
    const key = c.key();
    let counter = 0;
    let inside = 0;
    let maxInside = 0;
    const perWorker = 4;
    const workers = 6;
    // Each acquire may wait for every other grant, each handed over within the prompt-wake bound.
    const waitMs = workers * perWorker * (c.timing.promptWakeMs + 100) + c.timing.slackMs;
    const worker = async (index: number): Promise<void> => {
      const provider = providers[index % providers.length]!;
      for (let i = 0; i < perWorker; i++) {
        const lock = await provider.acquire(key, { waitMs });
        inside++;
        maxInside = Math.max(maxInside, inside);
        const read = counter;
        await delay(2);
        counter = read + 1;
        inside--;
        await lock.release();
      }
    };
    await Promise.all(Array.from({ length: workers }, (_, index) => worker(index)));
    expect(maxInside).toBe(1);
    expect(counter).toBe(workers * perWorker);
  });

  test('6. keys are case-sensitive; unicode and long keys work; bad keys are rejected, never aliased', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const base = c.key('Case');
    const upper = await locks.tryAcquire(base);
    const lower = await locks.tryAcquire(base.toLowerCase());
    expect(upper).not.toBeNull();
    expect(lower).not.toBeNull();
    const unicode = `${c.key()}/ключ-键-🔒 +&?%#=`;
    const unicodeLock = await locks.tryAcquire(unicode);
    expect(unicodeLock).not.toBeNull();
    expect((await locks.inspect(unicode))?.key).toBe(unicode);
    const long = (c.key('long') + '/').padEnd(MAX_KEY_BYTES, 'x');
    expect(Buffer.byteLength(long)).toBe(MAX_KEY_BYTES);
    expect(await locks.tryAcquire(long)).not.toBeNull();
    for (const bad of [long + 'x', `${base}//x`, `/${base}`, `${base}/`, `${base}/../x`, `${base}/./x`, `${base}\n`]) {
      const error = await rejection(locks.tryAcquire(bad));
      expect((error as { code?: string }).code, JSON.stringify(bad)).toBe(ErrorCode.InvalidArgument);
    }
  });

  test('7. not reentrant: a key held through this instance is busy for it too', async (t) => {
    const c = cases(t);
    const locks = await c.provider();
    const key = c.key();
    const lock = await locks.tryAcquire(key);
    expect(lock).not.toBeNull();
    expect(await locks.tryAcquire(key)).toBeNull();
    const error = await rejection(locks.acquire(key, { waitMs: 50 }));
    expect((error as { code?: string }).code).toBe(ErrorCode.Timeout);
    expect(await lock!.isHeld()).toBe(true);
  });
}
