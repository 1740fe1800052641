import { type What, whatText, within } from './within.js';

/** How often {@link until} asks again by default. */
const DEFAULT_EVERY_MS = 20;

export interface UntilOptions {
  /** The gap between two checks (default 20 ms). */
  readonly everyMs?: number;
  /** The bound on one check, for checks that call a server (default: the whole `withinMs`). */
  readonly checkMs?: number;
}

/**
 * Resolves with the milliseconds it took once `check()` is true; rejects naming `what` once it is still
 * false after `withinMs`. Each check is itself bounded, so a check that hangs fails too.
 *
 * For states that announce no event (a socket count, a key on a server): where an event exists, await the
 * event instead (see {@link abortedWithin}).
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  withinMs: number,
  what: What,
  options: UntilOptions = {},
): Promise<number> {
  const { everyMs = DEFAULT_EVERY_MS, checkMs = withinMs } = options;
  const started = performance.now();
  for (;;) {
    if (await within(Promise.resolve(check()), checkMs, () => `${whatText(what)} (one check of it)`)) return performance.now() - started;
    if (performance.now() - started >= withinMs) throw new Error(`${whatText(what)}: still not true after ${Math.round(withinMs)} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
