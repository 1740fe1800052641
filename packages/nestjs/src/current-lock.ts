import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock } from '@holdfast/core';

// One store for both builds of this package: an app that loads the ESM and the CommonJS copy (a
// dependency requires one, the app imports the other) must still see the lock the other copy set.
const STORE_KEY = Symbol.for('@holdfast/nestjs:currentLock');
const globals = globalThis as { [STORE_KEY]?: AsyncLocalStorage<Lock> };
const storage: AsyncLocalStorage<Lock> = (globals[STORE_KEY] ??= new AsyncLocalStorage<Lock>());

/**
 * The lock held for the `@WithLock` or `@LeaderOnly` method that is running (the innermost one when they
 * nest), from anywhere in its asynchronous call tree; undefined outside one. Watch
 * `currentLock()?.signal`: it aborts when the lock is lost, and the protected work should stop.
 */
export function currentLock(): Lock | undefined {
  return storage.getStore();
}

/** Runs `fn` with `lock` as its currentLock(). */
export function runWithLock<T>(lock: Lock, fn: () => T): T {
  return storage.run(lock, fn);
}
