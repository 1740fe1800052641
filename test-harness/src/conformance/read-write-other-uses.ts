import { ErrorCode, type Lock } from '@holdfast/core';
import { expect, test } from 'vitest';
import { codeOf } from '../helpers/index.js';
import { readWriteOf } from './read-write.js';
import type { CaseFactory } from './suite-types.js';
import type { CaseContext } from './support.js';

/** A read-write attempt on a key in another use: refused (null, or a LockConflictError), never granted. */
async function refused(c: CaseContext, what: string, attempt: Promise<Lock | null>): Promise<void> {
  const answer = await c.within(
    `${what} answers`,
    attempt.catch((error: unknown) => codeOf(error)),
  );
  if (answer !== null && typeof answer === 'object') await c.within('release answers', answer.release());
  expect(answer, `${what}: a read-write grant of a key held otherwise`).toSatisfy(
    (settled) => settled === null || settled === ErrorCode.Conflict,
  );
}

export function readWriteOtherUseCases(cases: CaseFactory): void {
  test.concurrent("96. a key held as a plain lock or as a semaphore refuses read-write grants, on the holder's instance and another", async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key('rw-other-use');
    const rwA = readWriteOf(t, c, a, key);
    if (!rwA) return;
    const rwB = b.readWrite(key);
    const plain = await c.within('tryAcquire answers', a.tryAcquire(key));
    expect(plain, 'a free key refused a plain lock').not.toBeNull();
    for (const rw of [rwA, rwB]) {
      await refused(c, 'tryRead of a plain lock', rw.tryRead());
      await refused(c, 'tryWrite of a plain lock', rw.tryWrite());
    }
    await c.within('release answers', plain!.release());
    if (c.capabilities.noSemaphores === undefined) {
      const slot = await c.within('a semaphore slot answers', a.semaphore(key, 2).tryAcquire());
      expect(slot, 'a free key refused a semaphore slot').not.toBeNull();
      for (const rw of [rwA, rwB]) {
        await refused(c, 'tryRead of a semaphore', rw.tryRead());
        await refused(c, 'tryWrite of a semaphore', rw.tryWrite());
      }
      await c.within('release answers', slot!.release());
    }
    const reader = await c.within('tryRead answers', rwB.tryRead());
    expect(reader, 'a free key refused a reader once its other uses were released').not.toBeNull();
    await c.within('release answers', reader!.release());
  });
}
