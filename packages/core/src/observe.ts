import { linkedController, pause } from './abort.js';
import type { LockInfo } from './types.js';

/** While a key is free a new holder can only be seen by asking: first soon, then less often. */
const FIRST_FREE_POLL_MS = 20;
/** A held key's release wakes the observer; this bounds a missed notification. */
const MAX_HELD_WAIT_MS = 15_000;

export interface ObservedKey {
  readonly key: string;
  readonly signal: AbortSignal | undefined;
  readonly closing: AbortSignal;
  readonly inspect: (signal: AbortSignal) => Promise<LockInfo | null>;
  /** The backend's release notification, when it has one. */
  readonly waitForRelease: ((signal: AbortSignal, timeoutMs: number) => Promise<void>) | undefined;
  readonly pollIntervalMs: number;
}

/**
 * Yields the key's holder now and after every change of holder (owner or token), null while free.
 * A held key is watched through the backend's release notification (or its lease end); a free key
 * is polled, quickly at first, because backends announce releases, not grants. Ends quietly when
 * the caller's signal aborts or the provider closes; a backend failure ends it with that error.
 */
export async function* observeHolder(observed: ObservedKey): AsyncGenerator<LockInfo | null, void, undefined> {
  const { controller, dispose } = linkedController(observed.signal, observed.closing);
  const signal = controller.signal;
  try {
    let last: LockInfo | null | undefined;
    let freePollMs = FIRST_FREE_POLL_MS;
    while (!signal.aborted) {
      // Armed before the read: a release that lands while inspect runs (a quorum's other nodes, a
      // quick re-grant and release) still ends the wait that follows instead of going unseen.
      const waitStop = linkedController(signal);
      const released = observed.waitForRelease?.(waitStop.controller.signal, MAX_HELD_WAIT_MS).then(
        () => true,
        () => false,
      );
      try {
        const info = await observed.inspect(signal);
        if (last === undefined || !sameHolder(last, info)) {
          last = info;
          yield info;
        }
        if (info === null) {
          await pause(freePollMs, signal);
          freePollMs = Math.min(2 * freePollMs, observed.pollIntervalMs);
          continue;
        }
        freePollMs = FIRST_FREE_POLL_MS;
        const untilExpiry = info.expiresAt ? Math.max(0, info.expiresAt.getTime() - Date.now()) + FIRST_FREE_POLL_MS : MAX_HELD_WAIT_MS;
        const timeoutMs = Math.min(untilExpiry, MAX_HELD_WAIT_MS);
        if (!released) {
          await pause(Math.min(timeoutMs, observed.pollIntervalMs), signal);
          continue;
        }
        const answered = await Promise.race([released, pause(timeoutMs, waitStop.controller.signal).then(() => true)]);
        // A failed wait is no answer about the key: look again after the usual interval.
        if (!answered) await pause(observed.pollIntervalMs, signal);
      } finally {
        waitStop.controller.abort();
        waitStop.dispose();
      }
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  } finally {
    dispose();
  }
}

function sameHolder(a: LockInfo | null, b: LockInfo | null): boolean {
  if (a === null || b === null) return a === b;
  return a.owner === b.owner && a.token === b.token;
}
