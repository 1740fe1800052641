import { closingOnFailure, type HandoffPair } from './handoff.js';
import { HolderProcess } from './holder-process.js';
import { benchKey } from './measure.js';
import type { LockSubject } from './types.js';

/**
 * The cross-process hand-off: the holder is a child process (its own provider on `url`), the waiter
 * a client of `waiter` in this process; latency runs from the child's release() start to the grant here.
 */
export async function crossProcessPair(url: string, waiter: LockSubject): Promise<HandoffPair> {
  const holder = HolderProcess.start(url);
  const client = await closingOnFailure(waiter.client(), () => holder.stop());
  const subject = `${waiter.subject}, cross-process`;
  const key = benchKey('handoff', subject);
  const never = new AbortController().signal;
  return {
    subject,
    note: 'holder in a child process, waiter in this one',
    async hold() {
      await holder.send(`acquire ${key}`);
      return async () => Number((await holder.send('release'))[0]);
    },
    async wait() {
      const release = await client.acquire(key, never);
      if (!release) throw new Error(`${subject}: the waiter gave up on ${key}`);
      return release;
    },
    close: async () => void (await Promise.allSettled([holder.stop(), client.close()])),
  };
}
