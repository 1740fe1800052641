/**
 * Test helpers for adapter tests and the conformance suite: bounded awaits, condition polling, abort
 * signals and error outcomes. Every helper that waits takes a bound and names what it waited for.
 */
export { type What, within } from './within.js';
export { type UntilOptions, until } from './until.js';
export { abortTime, abortedWithin, lostWithin } from './aborted.js';
export { type Settled, type Timed, codeOf, elapsed, rejection, settle, timed } from './outcomes.js';
