import type { LockBackend } from './backend.js';
import type { BackendCaller } from './backend-caller.js';
import { ANSWER_CHECKS } from './contract-check.js';
import { UnsupportedError } from './errors.js';
import type { LockTaker } from './lock-taker.js';
import type { ReadWriteLock } from './types.js';

/**
 * A read-write lock of one key: readers and the writer are grants of the backend's tryGrantMode,
 * taken, waited for, renewed and handed out by the same LockTaker as plain locks and slots.
 */
export function readWriteLock(
  key: string,
  backend: LockBackend,
  locks: LockTaker,
  caller: BackendCaller,
  assertOpen: () => void,
): ReadWriteLock {
  // A backend learns some limits on its first connection, so the capability is read on each call to readWrite().
  if (!backend.tryGrantMode || !backend.modeHolders || backend.capabilities.noReadWrite !== undefined) {
    const why = backend.capabilities.noReadWrite ?? 'this adapter implements no tryGrantMode';
    throw new UnsupportedError(backend.name, 'read-write locks', `${why} (see docs/read-write.md)`);
  }
  const holders = backend.modeHolders.bind(backend);
  return {
    key,
    tryRead: (options) => locks.tryTake(key, options, undefined, 'shared'),
    read: (options) => locks.take(key, options, undefined, 'shared'),
    tryWrite: (options) => locks.tryTake(key, options, undefined, 'exclusive'),
    write: (options) => locks.take(key, options, undefined, 'exclusive'),
    holders: async () => {
      assertOpen();
      return caller.run('holders', (call) => holders(key, call), { check: ANSWER_CHECKS.modeHolders });
    },
  };
}
