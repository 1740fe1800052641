import type { Busy, WaitOptions } from '@holdfast/core/backend';
import type { EtcdContext, EtcdWake } from './context.js';
import { prefixEnd } from './kv.js';
import { leaveNow } from './places.js';
import type { WatchTarget } from './watcher.js';

/**
 * Until another attempt is worth making. A queued lock contender (or read-write writer) watches
 * only the entry just before its own for deletion, a read-write reader the last non-reader's before
 * its own (etcd's waitDelete: no herd, a release wakes one waiter); a semaphore
 * contender, an observer or an attempt without a hint watches the key's directory, for any change.
 * Resolves at the first event, when the watch breaks (the next attempt finds out why), at
 * `timeoutMs` or when the signal aborts; never rejects.
 */
export function waitForChange(ctx: EtcdContext, key: string, last: Busy<EtcdWake>, options: WaitOptions): Promise<void> {
  const wake = last.wake;
  const givenUp = (): void => {
    if (options.place) leaveNow(ctx, options.place.id);
  };
  if (options.signal.aborted) givenUp();
  if (wake?.retryNow || options.signal.aborted) return Promise.resolve();
  const dir = ctx.layout.dir(key);
  const startRevision = wake ? String(BigInt(wake.revision) + 1n) : '0';
  const target: WatchTarget = wake?.predecessor
    ? { key: wake.predecessor, startRevision, deletesOnly: true }
    : { key: dir, rangeEnd: prefixEnd(dir), startRevision };
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', abandoned);
      stop();
      resolve();
    };
    const abandoned = (): void => {
      givenUp();
      done();
    };
    // At the place's deadline the acquire is over too.
    const timer = setTimeout(() => (options.place && Date.now() >= options.place.until ? abandoned() : done()), options.timeoutMs);
    options.signal.addEventListener('abort', abandoned, { once: true });
    const stop = ctx.watcher.watch(target, { onEvent: done, onBroken: done });
  });
}
