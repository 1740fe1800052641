/**
 * The longest delay setTimeout takes. A longer one fires at once (Node warns and uses 1 ms), so a
 * wait for a deadline further away than this arms no timer and ends by its other bounds.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;
