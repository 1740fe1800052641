import type { Busy, WaitOptions } from '@holdfast/core/backend';
import type { EtcdContext, EtcdWake } from './context.js';
import { prefixEnd, range } from './kv.js';
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
  const predecessor = wake?.predecessor;
  // A predecessor is watched from now on, then read once the watch exists: gone by then, the wait is
  // over. A watch from an older revision would miss nothing either, but etcd serves such a watch from
  // its history only every 100 ms (it is "unsynced" until then), which a hand-off would wait for
  // whenever any write came between the busy answer and the watch (under contention, nearly always).
  const target: WatchTarget = predecessor
    ? { key: predecessor, startRevision: '0', deletesOnly: true }
    : { key: dir, rangeEnd: prefixEnd(dir), startRevision: wake ? String(BigInt(wake.revision) + 1n) : '0' };
  return new Promise<void>((resolve) => {
    let settled = false;
    const done = (): void => {
      settled = true;
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
    const stillThere = async (): Promise<void> => {
      const signal = AbortSignal.any([options.signal, ctx.background()]);
      const read = await range(ctx.rpc, { key: predecessor!, keys_only: true, limit: 1 }, signal).catch(() => undefined);
      // A failed read ends the wait too: the next attempt finds out why.
      if (!settled && (read === undefined || read.kvs.length === 0)) done();
    };
    const stop = ctx.watcher.watch(target, {
      ...(predecessor ? { onCreated: () => void stillThere() } : {}),
      onEvent: done,
      onBroken: done,
    });
  });
}
