import { InvalidArgumentError } from './errors.js';

/**
 * The longest delay setTimeout takes. A longer one fires at once (Node warns and uses 1 ms), so a
 * wait for a deadline further away than this arms no timer and ends by its other bounds.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** What an error about a duration above {@link MAX_TIMER_MS} says about the limit. */
const LIMIT_TEXT = `${MAX_TIMER_MS} ms (about 24.8 days, the longest delay Node.js timers take)`;

/**
 * A duration option that becomes a timer's delay, checked against {@link MAX_TIMER_MS}: Node fires a
 * longer delay after 1 ms, which would turn a bound, an interval or a timeout into "at once". For
 * options where no value means "unlimited"; the caller has already checked the lower end.
 */
export function checkTimerRange(name: string, ms: number): number {
  if (ms > MAX_TIMER_MS) throw new InvalidArgumentError(name, `${ms} ms is above the limit of ${LIMIT_TEXT}`);
  return ms;
}

/**
 * For a duration option where a huge value means "no limit" (a per-command timeout whose 0 already
 * means none): anything above {@link MAX_TIMER_MS} waits that long instead, which is no limit in practice.
 */
export function clampToTimerRange(ms: number): number {
  return Math.min(ms, MAX_TIMER_MS);
}
